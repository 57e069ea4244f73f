// The data a800c-run feeds a plan: one .npy array per graph input (`--input NAME=FILE.npy`),
// batched along axis 0 with the batch size of the plan's input.
//
// Training order: batch `b` (the step counter) belongs to epoch b / (N / B) and holds the samples
// at positions [(b mod N/B) * B, + B) of that epoch's order: the identity, or with `shuffle` a
// permutation seeded by (seed, epoch) -- std::mt19937_64 and a Fisher-Yates shuffle written out
// here, since std::shuffle's algorithm is unspecified. The samples left over after N/B full
// batches are dropped for that epoch. So the batches depend only on the seed and the step, and a
// resumed run sees the same batches as an uninterrupted one. An input with no batch axis to
// split -- a scalar, or a plan input whose first dim is 0 (compiled for a zero-size tensor, whose
// file must hold exactly that shape) -- is written whole every step.
//
// Data parallel (SetShard(rank, size)): a step's global batch is size * B samples, positions
// [(b mod N/(size*B)) * size*B, + size*B) of the epoch's order, and rank r takes positions
// r, r + size, r + 2*size, ... of it, as PyTorch's DistributedSampler does: size ranks with batch
// B see, step by step, exactly the samples one rank with batch size*B sees.
//
// Every check happens at Load, before anything runs: an input the plan lacks, a plan input with
// no data, a dtype or a per-sample shape that differs from the plan's input, arrays of different
// lengths, fewer samples than one batch -- each an InvalidInput error naming the flag, the file
// and the input.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/ir/status.h"
#include "compiler/plan/plan.pb.h"
#include "runtime/core/executor.h"
#include "runtime/core/npy.h"

namespace a8 {

struct DatasetOptions {
  std::string flag = "--input";  // names the flag in errors ("--eval-input")
  // Training: every array holds the same number N >= B of samples, and Fill drops the
  // incomplete last batch of every epoch. Otherwise (inference) each array wraps around on its
  // own and may hold fewer samples than a batch.
  bool training = true;
  // Plan inputs without data are left to the caller (--synthetic).
  bool allow_missing = false;
  // --check-numerics: a batch holding an Inf or NaN is an error naming the input, its file, the
  // sample and the element (before any kernel reads it).
  bool check_numerics = false;
};

class Dataset {
 public:
  // `files`: (input name, .npy path) pairs, in command-line order.
  static StatusOr<Dataset> Load(const plan::Plan& plan,
                                const std::vector<std::pair<std::string, std::string>>& files,
                                const DatasetOptions& options);

  bool Has(const std::string& input) const { return arrays_.count(input) > 0; }
  // The .npy array bound to `input` (null when none).
  const NpyArray* Array(const std::string& input) const;
  // Samples per array (training: the common length; 0 when only scalars are bound).
  int64_t samples() const { return samples_; }
  int64_t batch() const { return batch_; }
  int64_t batches_per_epoch() const { return batch_ > 0 ? samples_ / (batch_ * shard_size_) : 0; }
  // Data parallel: this process is rank `rank` of `size` (training batches only).
  void SetShard(int rank, int size) {
    shard_rank_ = rank;
    shard_size_ = size;
  }

  // The dataset index of the sample at position `pos` of epoch `epoch`'s order.
  int64_t SampleIndex(int64_t epoch, int64_t pos, int64_t length, bool shuffle, uint64_t seed);

  // Training: copies batch `index` into the inputs of `ex` that this dataset binds.
  Status FillTrainBatch(int64_t index, bool shuffle, uint64_t seed, Executor& ex);
  // Copies batch `index` counted without epochs: the samples [index * B, + B) of the endless
  // sequence of epochs, each array wrapping around on its own length (inference steps, and
  // evaluation, where the last batch is padded with the first samples again).
  Status FillWrapped(int64_t index, bool shuffle, uint64_t seed, Executor& ex);

 private:
  struct Bound {
    int buffer = -1;
    NpyArray array;
    int64_t length = 1;       // samples along axis 0 (1 for a whole input)
    size_t sample_bytes = 0;  // bytes of one sample
    bool whole = false;       // a rank-0 or zero-size input: the whole array every step
    std::string where;        // "--input NAME=FILE.npy"
  };
  // check_numerics: InvalidInput when sample `sample` of `b` holds an Inf or NaN.
  Status CheckSample(const Bound& b, int64_t sample, int64_t step) const;
  // Copies sample `sample` into slot `slot` of a host batch of b's buffer.
  void CopySample(const Bound& b, int64_t sample, int64_t slot, uint8_t* batch) const;

  std::map<std::string, Bound> arrays_;
  bool check_numerics_ = false;
  int64_t samples_ = 0, batch_ = 1;
  int shard_rank_ = 0, shard_size_ = 1;
  // A few recent permutations, by (length, epoch, seed).
  std::map<std::tuple<int64_t, int64_t, uint64_t>, std::vector<int64_t>> permutations_;
};

// The permutation of [0, n) for (seed, epoch): std::mt19937_64 seeded from both, Fisher-Yates.
std::vector<int64_t> EpochPermutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace a8
