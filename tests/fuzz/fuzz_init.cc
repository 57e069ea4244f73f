// Shared set-up of every a800c libFuzzer target: protobuf's log is silenced (the plan and ONNX
// decoders log every invalid UTF-8 string, which floods the fuzzer's output and slows it).
// Fatal protobuf errors still abort, and so still count as findings.
#include <google/protobuf/stubs/logging.h>

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}
