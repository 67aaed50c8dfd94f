// SPDX-License-Identifier: GPL-3.0-or-later
// Replays fuzz inputs through a target's LLVMFuzzerTestOneInput without libFuzzer: the main
// g++ ASan/UBSan build links each target with this file (tests/fuzz/CMakeLists.txt), and CTest
// replays every committed seed and every past crash (corpus/ and regressions/) deterministically.
// Coverage-guided fuzzing itself is tests/fuzz/run (clang, libFuzzer).
//
// usage: fuzz_replay_TARGET PATH...   (files, or directories whose files are replayed)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) inputs.push_back(e.path());
      }
    } else if (fs::exists(p, ec)) {
      inputs.push_back(p);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs to replay (usage: %s PATH...)\n", argc > 0 ? argv[0] : "fuzz_replay");
    return 2;
  }
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream read;
    read << in.rdbuf();
    const std::string bytes = std::move(read).str();
    // A broken invariant aborts inside the call, naming the input last printed here.
    std::fprintf(stderr, "replay %s (%zu bytes)\n", p.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "%zu inputs replayed, every invariant held\n", inputs.size());
  return 0;
}
