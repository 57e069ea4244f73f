// The TCP communicator (communicator.h) of torchrun-style launches: RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT (LOCAL_RANK picks the GPU on the CUDA backend; the CPU ignores it).
//
// Rank 0 listens on MASTER_PORT; every other rank connects to MASTER_ADDR:MASTER_PORT (retrying
// until the collective timeout while rank 0 starts) and says its rank. The topology is a star:
// an all-reduce sends every rank's packed bucket to rank 0, which sums them in rank order, in
// float, and sends the mean back. That is O(N) at rank 0, fine for the few CPU processes of one
// machine this serves; the all-reduce runs when the bucket starts (blocking: no overlap). Every
// socket operation is bounded by the collective timeout, and a peer that closes its socket (a
// dead rank) is an error naming it at once.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/comm/comm_internal.h"

namespace a8 {
namespace {

using Clock = std::chrono::steady_clock;

class TcpCommunicator : public Communicator {
 public:
  TcpCommunicator(int rank, int size, double timeout_s, std::string master)
      : rank_(rank), size_(size), timeout_s_(timeout_s), master_(std::move(master)) {}
  ~TcpCommunicator() override {
    for (int fd : peers_) {
      if (fd >= 0) close(fd);
    }
  }

  // Connects the star (see the file comment).
  Status Connect(const std::string& host, int port) {
    const auto deadline = Deadline();
    if (rank_ == 0) {
      int lfd = socket(AF_INET, SOCK_STREAM, 0);
      if (lfd < 0) return Errno("socket");
      int one = 1;
      setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_ANY);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
          listen(lfd, size_) != 0) {
        Status s = Errno(fmt::format("listening on MASTER_PORT {}", port));
        close(lfd);
        return s;
      }
      peers_.assign(static_cast<size_t>(size_), -1);
      for (int joined = 1; joined < size_; ++joined) {
        pollfd p{lfd, POLLIN, 0};
        if (poll(&p, 1, MsLeft(deadline)) <= 0) {
          close(lfd);
          return Internal(
              "rank 0 of {}: only {} of {} ranks connected to {} within {:g} s "
              "(--collective-timeout)",
              size_, joined, size_, master_, timeout_s_);
        }
        int fd = accept(lfd, nullptr, nullptr);
        if (fd < 0) continue;
        Tune(fd);
        int32_t r = -1;
        A8_RETURN_IF_ERROR(Recv(fd, &r, sizeof(r), deadline, "the handshake", -1));
        if (r <= 0 || r >= size_ || peers_[r] >= 0) {
          close(fd);
          close(lfd);
          return InvalidInput(
              "rank 0: a process said it is rank {} (WORLD_SIZE {}): two ranks "
              "share a RANK, or RANK is out of range",
              r, size_);
        }
        peers_[r] = fd;
      }
      close(lfd);
      return Status::Ok();
    }
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 ||
        res == nullptr) {
      return InvalidInput("MASTER_ADDR '{}': cannot resolve it", host);
    }
    int fd = -1;
    while (true) {
      fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) break;
      if (fd >= 0) close(fd);
      fd = -1;
      if (Clock::now() > deadline) {
        freeaddrinfo(res);
        return Internal(
            "rank {} of {}: could not connect to rank 0 at {} within {:g} s "
            "(--collective-timeout)",
            rank_, size_, master_, timeout_s_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    freeaddrinfo(res);
    Tune(fd);
    peers_.assign(1, fd);
    int32_t r = rank_;
    return Send(fd, &r, sizeof(r), deadline, "the handshake", 0);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override {
    return fmt::format("{} ranks over TCP (launched torchrun-style: RANK/WORLD_SIZE, master {})",
                       size_, master_);
  }

  Status StartAllReduce(int bucket, const std::vector<CommBuffer>& buffers, DType wire) override {
    Done& d = done_[bucket];
    if (d.started) return Internal("all-reduce of bucket {} started twice", bucket);
    d.started = true;
    const DType w = wire == DType::kF16 ? DType::kF16 : DType::kF32;
    A8_ASSIGN_OR_RETURN(
        std::vector<uint8_t> packed,
        PackBucket(buffers, w, w == DType::kF16 ? 1.0f / static_cast<float>(size_) : 1.0f));
    const std::string what = fmt::format("the all-reduce of gradient bucket {}", bucket);
    const auto deadline = Deadline();
    if (rank_ == 0) {
      A8_ASSIGN_OR_RETURN(std::vector<float> sum, WireValues(packed, w));
      std::vector<uint8_t> theirs(packed.size());
      for (int r = 1; r < size_; ++r) {
        A8_RETURN_IF_ERROR(Recv(peers_[r], theirs.data(), theirs.size(), deadline, what, r));
        A8_ASSIGN_OR_RETURN(std::vector<float> v, WireValues(theirs, w));
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += v[i];
      }
      const float inv = w == DType::kF16 ? 1.0f : 1.0f / static_cast<float>(size_);
      for (float& x : sum) x *= inv;
      A8_RETURN_IF_ERROR(SetWireValues(sum, w, &packed));
      for (int r = 1; r < size_; ++r) {
        A8_RETURN_IF_ERROR(Send(peers_[r], packed.data(), packed.size(), deadline, what, r));
      }
    } else {
      A8_RETURN_IF_ERROR(Send(peers_[0], packed.data(), packed.size(), deadline, what, 0));
      A8_RETURN_IF_ERROR(Recv(peers_[0], packed.data(), packed.size(), deadline, what, 0));
    }
    // The wire holds the mean already: unpack it as it is.
    return UnpackBucket(packed, w, 1.0f, buffers);
  }

  Status WaitAllReduce(int bucket) override {
    // The exchange ran when the bucket started; every gradient of the bucket waits for it.
    auto it = done_.find(bucket);
    if (it == done_.end()) return Internal("bucket {} was never started", bucket);
    it->second.started = false;
    return Status::Ok();
  }

  void Progress() override {}

  Status Broadcast(void* data, int64_t bytes, int root, const std::string& what) override {
    if (root != 0) return Internal("the TCP communicator broadcasts from rank 0 only");
    const auto deadline = Deadline();
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) {
        A8_RETURN_IF_ERROR(Send(peers_[r], data, static_cast<size_t>(bytes), deadline, what, r));
      }
      return Status::Ok();
    }
    return Recv(peers_[0], data, static_cast<size_t>(bytes), deadline, what, 0);
  }

  Status MinMax(uint64_t value, uint64_t* min, uint64_t* max, int* min_rank, int* max_rank,
                const std::string& what) override {
    const auto deadline = Deadline();
    std::vector<uint64_t> all(static_cast<size_t>(size_), value);
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) {
        A8_RETURN_IF_ERROR(Recv(peers_[r], &all[r], sizeof(uint64_t), deadline, what, r));
      }
      for (int r = 1; r < size_; ++r) {
        A8_RETURN_IF_ERROR(Send(peers_[r], all.data(), all.size() * 8, deadline, what, r));
      }
    } else {
      A8_RETURN_IF_ERROR(Send(peers_[0], &value, sizeof(value), deadline, what, 0));
      A8_RETURN_IF_ERROR(Recv(peers_[0], all.data(), all.size() * 8, deadline, what, 0));
    }
    *min_rank = *max_rank = 0;
    for (int i = 1; i < size_; ++i) {
      if (all[i] < all[*min_rank]) *min_rank = i;
      if (all[i] > all[*max_rank]) *max_rank = i;
    }
    *min = all[*min_rank];
    *max = all[*max_rank];
    return Status::Ok();
  }

  Status Barrier(const std::string& what) override {
    uint64_t lo = 0, hi = 0;
    int a = 0, b = 0;
    return MinMax(0, &lo, &hi, &a, &b, what);
  }

 private:
  struct Done {
    bool started = false;
  };

  Clock::time_point Deadline() const {
    return Clock::now() +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  }
  static int MsLeft(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  }
  static void Tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  Status Errno(const std::string& what) const {
    return Internal("rank {} of {}: {}: {}", rank_, size_, what, std::strerror(errno));
  }
  Status Timeout(const std::string& what, int peer) const {
    return Internal(
        "rank {} of {}: {} did not complete within {:g} s (--collective-timeout): {} died, hangs "
        "or runs a different step",
        rank_, size_, what, timeout_s_,
        peer >= 0 ? fmt::format("rank {}", peer) : std::string("another rank"));
  }
  Status Closed(const std::string& what, int peer) const {
    return Internal("rank {} of {}: {}: rank {} closed its connection (it died or stopped)", rank_,
                    size_, what, peer);
  }

  // Moves `bytes` at p through fd, io(p, n) (a send or a recv) each time poll says the socket is
  // ready for `events`: until all are moved, the deadline passes or the peer closes.
  template <typename Byte, typename Io>
  Status Transfer(int fd, short events, Byte* p, size_t bytes, Clock::time_point deadline,
                  const std::string& what, int peer, Io io) {
    while (bytes > 0) {
      pollfd pf{fd, events, 0};
      int ready = poll(&pf, 1, MsLeft(deadline));
      if (ready == 0) return Timeout(what, peer);
      if (ready < 0 && errno != EINTR) return Errno(what);
      if (ready < 0) continue;
      ssize_t n = io(p, bytes);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return Closed(what, peer);
      p += n;
      bytes -= static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  Status Send(int fd, const void* data, size_t bytes, Clock::time_point deadline,
              const std::string& what, int peer) {
    return Transfer(fd, POLLOUT, static_cast<const uint8_t*>(data), bytes, deadline, what, peer,
                    [fd](const uint8_t* p, size_t n) { return send(fd, p, n, MSG_NOSIGNAL); });
  }

  Status Recv(int fd, void* data, size_t bytes, Clock::time_point deadline, const std::string& what,
              int peer) {
    return Transfer(fd, POLLIN, static_cast<uint8_t*>(data), bytes, deadline, what, peer,
                    [fd](uint8_t* p, size_t n) { return recv(fd, p, n, 0); });
  }

  int rank_, size_;
  double timeout_s_;
  std::string master_;
  std::vector<int> peers_;  // rank 0: one socket a rank (index 0 unused); others: rank 0's
  std::map<int, Done> done_;
};

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::atoi(v);
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> CreateTcpCommunicator(double timeout_s) {
  const int size = EnvInt("WORLD_SIZE", 1), rank = EnvInt("RANK", 0);
  if (size <= 1) return std::unique_ptr<Communicator>();
  if (rank < 0 || rank >= size) {
    return InvalidInput("RANK={} is outside 0..WORLD_SIZE-1 ({})", rank, size - 1);
  }
  const char* addr = std::getenv("MASTER_ADDR");
  const int port = EnvInt("MASTER_PORT", -1);
  if (addr == nullptr || *addr == '\0' || port <= 0 || port > 65535) {
    return InvalidInput(
        "RANK/WORLD_SIZE are set (a torchrun-style launch of {} ranks) but MASTER_ADDR and "
        "MASTER_PORT (1..65535) are not",
        size);
  }
  auto comm =
      std::make_unique<TcpCommunicator>(rank, size, timeout_s, fmt::format("{}:{}", addr, port));
  A8_RETURN_IF_ERROR(comm->Connect(addr, port));
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace a8
