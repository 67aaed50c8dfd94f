// The translation unit that makes the test binaries' precompiled header (tests/CMakeLists.txt).
