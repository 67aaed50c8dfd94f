// SPDX-License-Identifier: GPL-3.0-or-later
// Input no policy author would write on purpose: it must end in diagnostics, never a crash,
// a hang or a stack overflow.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "policy/loader.hpp"

using namespace pw::policy;

namespace {

const std::string kGood =
    "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: movies}\nspec:\n"
    "  guest: {node: pve1, vmid: 101, host: media-vm}\n  nic: {device: net1, queues: 8}\n"
    "  mount:\n    server: 198.51.100.2\n    nas_addresses: [192.0.2.2]\n    export: /srv/movies\n"
    "    path: /mnt/movies\n    options: [vers=3, nconnect=8, _netdev]\n    reason: pinned\n"
    "  verify: {probe_file: probe.bin, probe_bytes: 64MiB, min_share: 0.9}\n"
    "  restart: {allowed: true, window: 'Sun 02:00-04:00'}\n";

bool has_message(const LoadResult& r, const std::string& needle) {
  for (const auto& d : r.diagnostics) {
    if (d.message.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the fuzz seed itself is valid") {
  CHECK(load_text(kGood, "good.yaml").ok());
}

TEST_CASE("empty and whitespace-only files") {
  CHECK(has_message(load_text("", "e.yaml"), "holds no document"));
  CHECK(has_message(load_text("\n\n   \n# only a comment\n", "e.yaml"), "holds no document"));
  CHECK(has_message(load_text("---\n---\n", "e.yaml"), "holds no document"));
}

TEST_CASE("binary junk and invalid UTF-8 are refused as not text") {
  std::string junk(4096, '\0');
  std::mt19937 rng(42);
  for (auto& c : junk) c = static_cast<char>(rng() & 0xff);
  auto r = load_text(junk, "junk.bin");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].message.find("not a text file") != std::string::npos);
  auto utf = load_text("kind: \xff\xfe\n", "u.yaml");
  REQUIRE(utf.diagnostics.size() == 1);
  CHECK(utf.diagnostics[0].to_string() == "u.yaml:1:7: not a text file (invalid UTF-8); policy files are UTF-8 YAML");
}

TEST_CASE("oversized files are refused before parsing") {
  std::string big = "a: '" + std::string(kMaxPolicyFileBytes + 10, 'x') + "'\n";
  auto r = load_text(big, "big.yaml");
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].message.find("larger than 1024 KiB") != std::string::npos);
}

TEST_CASE("10,000-deep nesting is a syntax error, not a stack overflow") {
  std::string flow = std::string(10000, '[') + std::string(10000, ']');
  CHECK(has_message(load_text(flow, "deep.yaml"), "YAML syntax error"));
  std::string maps;
  for (int i = 0; i < 10000; ++i) maps += "{a: ";
  maps += "1" + std::string(10000, '}');
  CHECK(has_message(load_text(maps, "deep.yaml"), "YAML syntax error"));
  std::string seq;
  for (int i = 0; i < 10000; ++i) seq += "- ";
  seq += "x\n";
  CHECK_FALSE(load_text(seq, "deep.yaml").ok());
}

TEST_CASE("exponentially expanding anchors are never expanded") {
  // The classic "billion laughs": ten levels of ten aliases each.
  std::string bomb = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 10; ++i) {
    bomb += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", " : "") + std::string("*l") + std::to_string(i - 1);
    bomb += "]\n";
  }
  auto r = load_text(bomb, "bomb.yaml");
  CHECK_FALSE(r.ok());
  // The same bomb aimed at the fields the schema descends into.
  std::string aimed = kGood;
  aimed.replace(aimed.find("[vers=3, nconnect=8, _netdev]"), 29, "*l10");
  aimed.replace(aimed.find("[192.0.2.2]"), 11, "*l10");
  auto r2 = load_text(bomb.substr(0, bomb.size()) + "---\n" + aimed, "bomb.yaml");
  CHECK_FALSE(r2.ok());
  CHECK(r2.diagnostics.size() < 100);
}

TEST_CASE("random mutations of a valid policy never crash the loader") {
  std::mt19937 rng(20261130);
  const std::string alphabet = "{}[]:,-&*!|>'\"#%@`\n\t ab019=./\\\x01\xc3\xa9";
  for (int round = 0; round < 3000; ++round) {
    std::string text = kGood;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const auto pos = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          text.erase(pos, 1 + rng() % 4);
          break;
      }
      if (text.empty()) text = "x";
    }
    if (std::getenv("PW_DUMP_MUTANT")) {
      std::FILE* f = std::fopen("/tmp/mutant.yaml", "wb");
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
    auto r = load_text(text, "mutant.yaml");
    // Whatever came out must be either a valid policy or at least one positioned message.
    if (!r.ok()) {
      for (const auto& d : r.diagnostics) {
        CHECK(d.pos.file == "mutant.yaml");
        CHECK_FALSE(d.message.empty());
      }
    }
  }
}
