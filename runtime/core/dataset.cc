#include "runtime/core/dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "runtime/core/numerics.h"

namespace a8 {
namespace {

std::string DimsText(const std::vector<int64_t>& d) {
  return fmt::format("[{}]", fmt::join(d, ","));
}

bool IsLabels(const plan::Plan& plan, const std::string& name) {
  return plan.training() && plan.train().labels() == name;
}

// "input 'y' (the labels)" -- the role helps when the labels are what is wrong.
std::string InputText(const plan::Plan& plan, const std::string& name) {
  return fmt::format("input '{}'{}", name, IsLabels(plan, name) ? " (the labels)" : "");
}

std::string LabelsNote(const plan::Plan& plan, const std::string& name) {
  return IsLabels(plan, name) ? fmt::format(" ('{}' is the labels)", name) : "";
}

}  // namespace

std::vector<int64_t> EpochPermutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(epoch), 0x5eedu};
  std::mt19937_64 rng(seq);
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng() % static_cast<uint64_t>(i + 1));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

StatusOr<Dataset> Dataset::Load(const plan::Plan& plan,
                                const std::vector<std::pair<std::string, std::string>>& files,
                                const DatasetOptions& options) {
  Dataset d;
  d.check_numerics_ = options.check_numerics;
  std::string first_file;  // the file that set samples_, for the length error
  bool have_batch = false;
  for (const auto& [name, path] : files) {
    std::string where = fmt::format("{} {}={}", options.flag, name, path);
    const plan::Binding* bind = nullptr;
    for (const plan::Binding& b : plan.inputs())
      if (b.name() == name) bind = &b;
    if (bind == nullptr) {
      std::string names;
      for (const plan::Binding& b : plan.inputs()) names += (names.empty() ? "" : ", ") + b.name();
      return InvalidInput("{}: the plan has no input '{}' (inputs: {})", where, name, names);
    }
    if (d.arrays_.count(name)) return InvalidInput("{}: input '{}' given twice", where, name);
    const plan::Buffer& buf = plan.buffers(bind->buffer());
    DType want = static_cast<DType>(buf.type().dtype());
    std::vector<int64_t> dims(buf.type().dims().begin(), buf.type().dims().end());
    A8_ASSIGN_OR_RETURN(NpyArray arr, ReadNpyFile(path, want == DType::kBF16));
    if (arr.dtype != want)
      return InvalidInput("{}: dtype: the file holds {}, the plan's input is {}{}", where,
                          DTypeName(arr.dtype), DTypeName(want), LabelsNote(plan, name));
    Bound b;
    b.buffer = bind->buffer();
    if (dims.empty()) {
      if (!arr.dims.empty())
        return InvalidInput("{}: shape: the file holds {}, the plan's input is a scalar{}", where,
                            DimsText(arr.dims), LabelsNote(plan, name));
      b.whole = true;
      b.sample_bytes = arr.data.size();
    } else if (dims[0] == 0) {
      // A plan compiled for a zero-size input (an ONNX dim may be 0): no samples to batch, so
      // the file holds exactly the plan's shape and is bound whole, as a scalar is.
      if (arr.dims != dims)
        return InvalidInput(
            "{}: shape: the file holds {}, the plan's input is {}{} (zero-size along the first "
            "axis: the file must hold exactly that shape)",
            where, DimsText(arr.dims), DimsText(dims), LabelsNote(plan, name));
      b.whole = true;
      b.sample_bytes = 0;
    } else {
      bool ok = arr.dims.size() == dims.size() && arr.dims[0] > 0 &&
                std::equal(dims.begin() + 1, dims.end(), arr.dims.begin() + 1);
      if (!ok) {
        std::vector<int64_t> sample(dims.begin() + 1, dims.end());
        return InvalidInput(
            "{}: shape: the file holds {}, the plan's input is {}{} (batched along the first "
            "axis: each sample must be {})",
            where, DimsText(arr.dims), DimsText(dims), LabelsNote(plan, name), DimsText(sample));
      }
      b.length = arr.dims[0];
      b.sample_bytes = arr.data.size() / static_cast<size_t>(b.length);
      if (options.training) {
        if (b.length < dims[0])
          return InvalidInput("{}: {} samples, fewer than one batch of {} (the plan's {} is {})",
                              where, b.length, dims[0], InputText(plan, name), DimsText(dims));
        if (have_batch && dims[0] != d.batch_)
          return InvalidInput("{}: the plan's {} has batch {}, other inputs have {}", where,
                              InputText(plan, name), dims[0], d.batch_);
        if (have_batch && b.length != d.samples_)
          return InvalidInput(
              "{}: {} samples, but {} holds {}: every array needs one entry per "
              "sample",
              where, b.length, first_file, d.samples_);
      }
      if (!have_batch) {
        d.batch_ = dims[0];
        d.samples_ = b.length;
        first_file = path;
        have_batch = true;
      }
    }
    b.array = std::move(arr);
    b.where = where;
    d.arrays_.emplace(name, std::move(b));
  }
  if (!options.allow_missing)
    for (const plan::Binding& b : plan.inputs())
      if (!d.arrays_.count(b.name()))
        return InvalidInput("{}: no data (give {} {}=FILE.npy{})", InputText(plan, b.name()),
                            options.flag, b.name(),
                            options.flag == "--input" ? " or --synthetic" : "");
  return d;
}

const NpyArray* Dataset::Array(const std::string& input) const {
  auto it = arrays_.find(input);
  return it == arrays_.end() ? nullptr : &it->second.array;
}

int64_t Dataset::SampleIndex(int64_t epoch, int64_t pos, int64_t length, bool shuffle,
                             uint64_t seed) {
  if (!shuffle) return pos;
  auto key = std::make_tuple(length, epoch, seed);
  auto it = permutations_.find(key);
  if (it == permutations_.end()) {
    if (permutations_.size() > 4) permutations_.clear();
    it = permutations_.emplace(key, EpochPermutation(length, seed, epoch)).first;
  }
  return it->second[static_cast<size_t>(pos)];
}

void Dataset::CopySample(const Bound& b, int64_t sample, int64_t slot, uint8_t* batch) const {
  if (b.sample_bytes == 0) return;  // a zero-size input
  std::memcpy(batch + static_cast<size_t>(slot) * b.sample_bytes,
              b.array.data.data() + static_cast<size_t>(sample) * b.sample_bytes, b.sample_bytes);
}

Status Dataset::CheckSample(const Bound& b, int64_t sample, int64_t step) const {
  if (!check_numerics_) return Status::Ok();
  const size_t size = DTypeSize(b.array.dtype);
  const uint8_t* data = b.array.data.data() + static_cast<size_t>(sample) * b.sample_bytes;
  auto bad = FindNonFinite(b.array.dtype, data, static_cast<int64_t>(b.sample_bytes / size));
  if (!bad) return Status::Ok();
  std::string element = fmt::format("element {}", bad->index);
  if (b.array.dims.size() > 2) {  // the index within the sample, per dim
    std::vector<int64_t> index(b.array.dims.size() - 1);
    int64_t flat = bad->index;
    for (size_t d = index.size(); d-- > 0;) {
      const int64_t dim = std::max<int64_t>(b.array.dims[d + 1], 1);
      index[d] = flat % dim;
      flat /= dim;
    }
    element += fmt::format(" [{}]", fmt::join(index, ","));
  }
  return InvalidInput(
      "--check-numerics: step {}: {}: sample {} holds a non-finite value: {} is {} (a graph "
      "input, before any kernel read it)",
      step, b.where, b.whole ? 0 : sample, element, NonFiniteName(bad->value));
}

Status Dataset::FillTrainBatch(int64_t index, bool shuffle, uint64_t seed, Executor& ex) {
  if (index < 0) return InvalidInput("batch {}: a negative step", index);
  int64_t per_epoch = batches_per_epoch();
  for (const auto& [name, b] : arrays_) {
    // The batch is assembled on the host and copied in once (the buffer may be device memory).
    std::vector<uint8_t> batch(ex.plan().buffers(b.buffer).bytes());
    if (b.whole || per_epoch == 0) {
      A8_RETURN_IF_ERROR(CheckSample(b, 0, index));
      CopySample(b, 0, 0, batch.data());
      A8_RETURN_IF_ERROR(ex.WriteBuffer(b.buffer, batch.data()));
      continue;
    }
    const int64_t global = batch_ * shard_size_;
    int64_t epoch = index / per_epoch, first = (index % per_epoch) * global + shard_rank_;
    for (int64_t j = 0; j < batch_; ++j) {
      const int64_t sample = SampleIndex(epoch, first + j * shard_size_, b.length, shuffle, seed);
      A8_RETURN_IF_ERROR(CheckSample(b, sample, index));
      CopySample(b, sample, j, batch.data());
    }
    A8_RETURN_IF_ERROR(ex.WriteBuffer(b.buffer, batch.data()));
  }
  return Status::Ok();
}

Status Dataset::FillWrapped(int64_t index, bool shuffle, uint64_t seed, Executor& ex) {
  if (index < 0) return InvalidInput("batch {}: a negative index", index);
  for (const auto& [name, b] : arrays_) {
    const plan::Buffer& buf = ex.plan().buffers(b.buffer);
    std::vector<uint8_t> host(buf.bytes());
    if (b.whole) {
      A8_RETURN_IF_ERROR(CheckSample(b, 0, index));
      CopySample(b, 0, 0, host.data());
      A8_RETURN_IF_ERROR(ex.WriteBuffer(b.buffer, host.data()));
      continue;
    }
    int64_t batch = buf.type().dims(0);
    for (int64_t j = 0; j < batch; ++j) {
      int64_t g = index * batch + j;
      const int64_t sample = SampleIndex(g / b.length, g % b.length, b.length, shuffle, seed);
      A8_RETURN_IF_ERROR(CheckSample(b, sample, index));
      CopySample(b, sample, j, host.data());
    }
    A8_RETURN_IF_ERROR(ex.WriteBuffer(b.buffer, host.data()));
  }
  return Status::Ok();
}

}  // namespace a8
