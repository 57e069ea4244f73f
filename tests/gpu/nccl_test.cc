// The NCCL communicator (runtime/comm/comm_nccl.h) on one GPU, one rank: the mean over one rank
// is the values themselves, so every dtype and wire dtype has an exact expectation (an f32
// gradient on an f16 wire: its f16 rounding). The gradients are produced and read by kernels on
// the compute stream, so the event plumbing between the streams is checked too. Skips, saying
// why, where no GPU is present.
//
// NcclTimeoutTest aborts a communicator; run it in a process of its own (--gtest_filter), so
// that whatever NCCL leaves behind after an abort cannot touch the other tests.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/float16.h"
#include "kernels/cuda/cast_kernels.h"
#include "runtime/comm/comm_nccl.h"

namespace a8 {
namespace {

bool HaveGpu(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) return true;
  *why = err != cudaSuccess ? cudaGetErrorString(err) : "0 devices";
  return false;
}

// A one-rank bootstrap that counts what the NCCL communicator delegates to it.
class CountingBootstrap : public Communicator {
 public:
  explicit CountingBootstrap(int* broadcasts) : broadcasts_(broadcasts) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string description() const override { return "test bootstrap"; }
  Status StartAllReduce(int, const std::vector<CommBuffer>&, DType) override {
    return Internal("the bootstrap must not all-reduce gradients");
  }
  Status WaitAllReduce(int) override { return Internal("the bootstrap must not wait"); }
  void Progress() override {}
  Status Broadcast(void*, int64_t, int, const std::string&) override {
    ++*broadcasts_;
    return Status::Ok();
  }
  Status MinMax(uint64_t v, uint64_t* min, uint64_t* max, int* min_rank, int* max_rank,
                const std::string&) override {
    *min = *max = v;
    *min_rank = *max_rank = 0;
    return Status::Ok();
  }
  Status Barrier(const std::string&) override { return Status::Ok(); }

 private:
  int* broadcasts_;
};

// Random values of a gradient's magnitude, never zero, within f16's range.
std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    x = dist(rng);
    if (x == 0.0f) x = 0.5f;
  }
  return v;
}

// A device gradient of `dtype`, produced on the compute stream from host values (so the
// all-reduce must wait for the compute stream to see it) and read back the same way: f16 and
// bf16 through the GPU cast kernels, f32 and f64 by copies.
class DeviceGradient {
 public:
  DeviceGradient(DType dtype, std::vector<float> values)
      : dtype_(dtype), n_(static_cast<int64_t>(values.size())), host_(std::move(values)) {
    EXPECT_EQ(cudaMalloc(&f32_, n_ * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&data_, n_ * DTypeSize(dtype_)), cudaSuccess);
    for (float x : host_) host_f64_.push_back(x);
  }
  ~DeviceGradient() {
    cudaFree(f32_);
    cudaFree(data_);
  }
  CommBuffer buffer() const { return {data_, n_, dtype_}; }

  // Enqueues on `stream`: the values, converted to the gradient's dtype.
  void Produce(cudaStream_t stream) {
    if (dtype_ == DType::kF64) {
      ASSERT_EQ(cudaMemcpyAsync(data_, host_f64_.data(), n_ * sizeof(double),
                                cudaMemcpyHostToDevice, stream),
                cudaSuccess);
      return;
    }
    ASSERT_EQ(
        cudaMemcpyAsync(f32_, host_.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream),
        cudaSuccess);
    cudaError_t e = cudaSuccess;
    switch (dtype_) {
      case DType::kF16:
        e = cuda::CastF32ToF16(f32_, static_cast<uint16_t*>(data_), n_, stream);
        break;
      case DType::kBF16:
        e = cuda::CastF32ToBF16(f32_, static_cast<uint16_t*>(data_), n_, stream);
        break;
      default:
        e = cudaMemcpyAsync(data_, f32_, n_ * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    }
    ASSERT_EQ(e, cudaSuccess);
  }

  // Enqueues on `stream` the gradient back to the host, waits for the stream, and returns the
  // values as double.
  std::vector<double> Read(cudaStream_t stream) {
    std::vector<double> out(static_cast<size_t>(n_));
    if (dtype_ == DType::kF64) {
      EXPECT_EQ(
          cudaMemcpyAsync(out.data(), data_, n_ * sizeof(double), cudaMemcpyDeviceToHost, stream),
          cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      return out;
    }
    cudaError_t e = cudaSuccess;
    switch (dtype_) {
      case DType::kF16:
        e = cuda::CastF16ToF32(static_cast<const uint16_t*>(data_), f32_, n_, stream);
        break;
      case DType::kBF16:
        e = cuda::CastBF16ToF32(static_cast<const uint16_t*>(data_), f32_, n_, stream);
        break;
      default:
        e = cudaMemcpyAsync(f32_, data_, n_ * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    }
    EXPECT_EQ(e, cudaSuccess);
    std::vector<float> f(static_cast<size_t>(n_));
    EXPECT_EQ(cudaMemcpyAsync(f.data(), f32_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    for (size_t i = 0; i < f.size(); ++i) out[i] = f[i];
    return out;
  }

  // What one rank's mean must be: the values in the gradient's dtype, rounded through `wire`
  // first where an f32 gradient travels in f16.
  std::vector<double> Expected(DType wire) const {
    std::vector<double> out;
    for (float x : host_) {
      float v = x;
      if (dtype_ == DType::kF16 || (dtype_ == DType::kF32 && wire == DType::kF16)) {
        v = HalfBitsToFloat(FloatToHalfBits(x));
      } else if (dtype_ == DType::kBF16) {
        v = BFloat16BitsToFloat(FloatToBFloat16Bits(x));
      }
      out.push_back(v);
    }
    return out;
  }

 private:
  DType dtype_;
  int64_t n_;
  std::vector<float> host_;
  std::vector<double> host_f64_;
  float* f32_ = nullptr;
  void* data_ = nullptr;
};

class NcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!HaveGpu(&why)) GTEST_SKIP() << "no CUDA GPU present (" << why << ")";
    StatusOr<std::unique_ptr<Communicator>> comm = CreateNcclCommunicator(nullptr, 60.0);
    ASSERT_TRUE(comm.ok()) << comm.status().message();
    comm_ = std::move(comm).value();
    nccl_ = dynamic_cast<NcclCommunicator*>(comm_.get());
    ASSERT_NE(nccl_, nullptr);
    ASSERT_EQ(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), cudaSuccess);
    nccl_->SetComputeStream(compute_);
  }
  void TearDown() override {
    comm_.reset();
    if (compute_ != nullptr) cudaStreamDestroy(compute_);
  }

  // One step of one bucket: produce the gradients, start, wait, read them back and compare.
  void CheckBucket(int bucket, DType wire, std::vector<DeviceGradient*> grads) {
    std::vector<CommBuffer> buffers;
    for (DeviceGradient* g : grads) {
      g->Produce(compute_);
      buffers.push_back(g->buffer());
    }
    Status s = comm_->StartAllReduce(bucket, buffers, wire);
    ASSERT_TRUE(s.ok()) << s.message();
    s = comm_->WaitAllReduce(bucket);
    ASSERT_TRUE(s.ok()) << s.message();
    for (size_t i = 0; i < grads.size(); ++i) {
      const std::vector<double> got = grads[i]->Read(compute_);
      const std::vector<double> want = grads[i]->Expected(wire);
      ASSERT_EQ(got.size(), want.size());
      for (size_t j = 0; j < got.size(); ++j) {
        ASSERT_EQ(got[j], want[j]) << "bucket " << bucket << " gradient " << i << " element " << j;
      }
    }
    s = nccl_->Health();
    ASSERT_TRUE(s.ok()) << s.message();
  }

  std::unique_ptr<Communicator> comm_;
  NcclCommunicator* nccl_ = nullptr;
  cudaStream_t compute_ = nullptr;
};

TEST_F(NcclTest, OneRankWorld) {
  EXPECT_EQ(comm_->rank(), 0);
  EXPECT_EQ(comm_->size(), 1);
  EXPECT_NE(comm_->description().find("NCCL"), std::string::npos) << comm_->description();
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, nccl_->device());
  uint64_t min = 0, max = 0;
  int min_rank = -1, max_rank = -1;
  Status s = comm_->MinMax(42, &min, &max, &min_rank, &max_rank, "a test value");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(min, 42u);
  EXPECT_EQ(max, 42u);
  s = comm_->Barrier("a test barrier");
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST_F(NcclTest, F32WireKeepsEveryDtype) {
  DeviceGradient f32(DType::kF32, RandomFloats(1001, 1));
  DeviceGradient f16(DType::kF16, RandomFloats(777, 2));
  DeviceGradient bf16(DType::kBF16, RandomFloats(333, 3));
  DeviceGradient f64(DType::kF64, RandomFloats(65, 4));
  DeviceGradient one(DType::kF32, RandomFloats(1, 5));
  CheckBucket(0, DType::kF32, {&f32, &f16, &bf16, &f64, &one});
}

TEST_F(NcclTest, F16WireRoundsF32GradientsOnce) {
  DeviceGradient f32(DType::kF32, RandomFloats(4099, 6));
  DeviceGradient f16(DType::kF16, RandomFloats(513, 7));
  DeviceGradient bf16(DType::kBF16, RandomFloats(17, 8));
  CheckBucket(1, DType::kF16, {&f32, &f16, &bf16});
}

TEST_F(NcclTest, BucketsRepeatAcrossSteps) {
  DeviceGradient a(DType::kF32, RandomFloats(1 << 16, 9));
  DeviceGradient b(DType::kF16, RandomFloats(3000, 10));
  for (int step = 0; step < 3; ++step) {
    CheckBucket(0, DType::kF16, {&a});
    CheckBucket(2, DType::kF32, {&b});
  }
}

TEST_F(NcclTest, MisuseIsAnError) {
  DeviceGradient a(DType::kF32, RandomFloats(100, 11));
  a.Produce(compute_);
  Status s = comm_->WaitAllReduce(5);
  EXPECT_FALSE(s.ok());
  ASSERT_TRUE(comm_->StartAllReduce(5, {a.buffer()}, DType::kF32).ok());
  s = comm_->StartAllReduce(5, {a.buffer()}, DType::kF32);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("started twice"), std::string::npos) << s.message();
  s = comm_->WaitAllReduce(5);
  EXPECT_TRUE(s.ok()) << s.message();
  s = comm_->WaitAllReduce(5);  // a finished bucket: at once
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(cudaStreamSynchronize(compute_), cudaSuccess);
}

TEST(NcclBootstrapTest, TheUniqueIdTravelsOverTheBootstrap) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "no CUDA GPU present (" << why << ")";
  int broadcasts = 0;
  StatusOr<std::unique_ptr<Communicator>> comm =
      CreateNcclCommunicator(std::make_unique<CountingBootstrap>(&broadcasts), 60.0);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  EXPECT_EQ(broadcasts, 1);
  std::vector<uint8_t> params(64, 7);
  Status s = (*comm)->Broadcast(params.data(), 64, 0, "the parameters");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(broadcasts, 2);
  EXPECT_NE((*comm)->description().find("test bootstrap"), std::string::npos);
}

TEST(NcclBootstrapTest, BadTimeoutOrLocalRank) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "no CUDA GPU present (" << why << ")";
  StatusOr<std::unique_ptr<Communicator>> comm = CreateNcclCommunicator(nullptr, 0.0);
  EXPECT_FALSE(comm.ok());
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  const std::string too_far = std::to_string(count);
  setenv("LOCAL_RANK", too_far.c_str(), 1);
  comm = CreateNcclCommunicator(nullptr, 60.0);
  unsetenv("LOCAL_RANK");
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("LOCAL_RANK"), std::string::npos)
      << comm.status().message();
}

// Holds the stream it is enqueued on until released (or 10 s, so that nothing can hang).
struct StreamGate {
  std::atomic<bool> open{false};
  static void CUDART_CB Hold(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!gate->open.load() && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

// A bucket that cannot finish (its gradients never become ready: the compute stream is held)
// stands for a peer that hangs: the watchdog aborts within the timeout and every later call
// names the bucket.
TEST(NcclTimeoutTest, AHungBucketIsAbortedWithinTheTimeout) {
  std::string why;
  if (!HaveGpu(&why)) GTEST_SKIP() << "no CUDA GPU present (" << why << ")";
  StatusOr<std::unique_ptr<Communicator>> made = CreateNcclCommunicator(nullptr, 0.5);
  ASSERT_TRUE(made.ok()) << made.status().message();
  std::unique_ptr<Communicator> comm = std::move(made).value();
  auto* nccl = dynamic_cast<NcclCommunicator*>(comm.get());
  ASSERT_NE(nccl, nullptr);
  cudaStream_t compute = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  nccl->SetComputeStream(compute);
  DeviceGradient g(DType::kF32, RandomFloats(1000, 12));

  // Produced before the gate: a copy from pageable memory may wait for its stream.
  g.Produce(compute);
  StreamGate gate;
  ASSERT_EQ(cudaLaunchHostFunc(compute, &StreamGate::Hold, &gate), cudaSuccess);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(comm->StartAllReduce(3, {g.buffer()}, DType::kF32).ok());
  Status health;
  while (health.ok() && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    health = nccl->Health();
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  gate.open = true;  // the abort may wait for the GPU: let the held stream go
  ASSERT_FALSE(health.ok()) << "no error after " << waited << " s";
  EXPECT_LT(waited, 2.0);
  EXPECT_NE(health.message().find("gradient bucket 3"), std::string::npos) << health.message();
  EXPECT_NE(health.message().find("did not complete within 0.5 s"), std::string::npos)
      << health.message();
  EXPECT_NE(health.message().find("rank 0 of 1"), std::string::npos) << health.message();
  Status s = comm->WaitAllReduce(3);
  EXPECT_EQ(s.message(), health.message());
  s = comm->StartAllReduce(4, {g.buffer()}, DType::kF32);
  EXPECT_EQ(s.message(), health.message());
  comm.reset();
  EXPECT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(compute), cudaSuccess);
}

}  // namespace
}  // namespace a8
