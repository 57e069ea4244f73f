// libFuzzer target for the ONNX importer: any byte string must give a graph that verifies and
// shape-infers, or a clean error. Never a crash, a hang or a sanitizer report.
//
//   tools/fuzz.sh 1 import    (build-fuzz, seeds tests/fuzz/corpus/import, tests/fuzz/import.dict)
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/ir/verifier.h"
#include "compiler/onnx/importer.h"
#include "passes/analysis/shape_inference.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  // No model folder: external data is always rejected, so the fuzzer cannot read files.
  auto graph = a8::ImportOnnxBytes(bytes, "fuzz.onnx", /*model_dir=*/"");
  if (!graph.ok()) return 0;
  a8::ShapeInference shapes;
  auto changed = shapes.Run(**graph);
  if (changed.ok()) (void)a8::Verify(**graph);
  return 0;
}
