// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/record.hpp"

#include <catch2/catch.hpp>

using namespace pw::journal;
namespace json = boost::json;

TEST_CASE("CRC-32 is the IEEE one") {
  CHECK(crc32("123456789") == 0xCBF43926u);
  CHECK(crc32("") == 0u);
}

TEST_CASE("a record survives encode and decode with its payload") {
  json::object data{{"previous", "virtio=52:54:00:12:34:02,bridge=vmbr1"}, {"digest", "abc123"}, {"queues", 1}};
  auto r = JournalRecord::step_begin(StepPhase::apply, 3, "set-nic-queues", "pve1/101", data);
  r.stamp(7, "2024-05-05T02:00:00.000Z");
  const std::string line = encode_line(r);
  CHECK(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);
  auto back = decode_line(std::string_view(line).substr(0, line.size() - 1), "j:1");
  REQUIRE(back);
  CHECK(back->type() == RecordType::step_begin);
  CHECK(back->seq() == 7);
  CHECK(back->time() == "2024-05-05T02:00:00.000Z");
  CHECK(back->phase() == StepPhase::apply);
  CHECK(back->step() == 3u);
  CHECK(back->kind() == "set-nic-queues");
  CHECK(back->guest() == "pve1/101");
  CHECK(back->data() == data);
  CHECK(back->result().empty());
}

TEST_CASE("every record type round-trips") {
  std::vector<JournalRecord> records{
      JournalRecord::run_started("plan-1", {{"policies", json::array{"movies-10g"}}}),
      JournalRecord::run_resumed({{"pid", 42}}),
      JournalRecord::step_done(StepPhase::rollback, 2, {{"backup", "/etc/fstab.1234~"}}),
      JournalRecord::step_failed(StepPhase::apply, 1, "HTTP 500 from pve1"),
      JournalRecord::rollback_begin("wrong-path: bytes on link1"),
      JournalRecord::rollback_done(false, "guest unreachable"),
      JournalRecord::run_finished({{"movies-10g", "rolled-back"}}),
  };
  std::uint64_t seq = 1;
  for (auto& r : records) {
    r.stamp(seq++, "t");
    const auto line = encode_line(r);
    auto back = decode_line(std::string_view(line).substr(0, line.size() - 1), "j");
    REQUIRE(back);
    CHECK(back->json() == r.json());
    CHECK(back->type() == r.type());
  }
  CHECK(records[0].plan_id() == "plan-1");
  CHECK(records[2].result().at("backup") == "/etc/fstab.1234~");
  CHECK(records[3].error() == "HTTP 500 from pve1");
  CHECK_FALSE(records[3].changed_nothing());  // may have changed something: recover undoes it
  CHECK(records[5].ok() == false);
  CHECK(records[5].reason() == "guest unreachable");
  CHECK(records[6].verdicts().at("movies-10g") == "rolled-back");
}

TEST_CASE("damaged lines are refused with the reason") {
  auto r = JournalRecord::step_done(StepPhase::apply, 0);
  r.stamp(2, "t");
  std::string line = encode_line(r);
  line.pop_back();
  SECTION("one flipped character") {
    line[line.size() / 2] ^= 0x01;
    auto back = decode_line(line, "j:2");
    REQUIRE_FALSE(back);
    CHECK(back.error().what == "record checksum mismatch");
    CHECK(back.error().where == "j:2");
  }
  SECTION("no checksum") {
    CHECK(decode_line(line.substr(9), "j").error().what == "record has no checksum");
  }
  SECTION("zeros from a lost block") {
    CHECK_FALSE(decode_line(std::string(40, '\0'), "j"));
  }
}

TEST_CASE("intact checksums over wrong fields are refused too") {
  auto encode = [](const json::object& o) {
    const auto body = json::serialize(o);
    char crc[9];
    std::snprintf(crc, sizeof crc, "%08x", crc32(body));
    return std::string(crc) + " " + body;
  };
  CHECK(decode_line(encode({{"seq", 1}, {"time", "t"}, {"type", "step-done"}, {"phase", "apply"}}), "j").error().what ==
        "record has no step number");
  CHECK(
      decode_line(encode({{"seq", 1}, {"time", "t"}, {"type", "step-begin"}, {"phase", "sideways"}, {"step", 1}}), "j")
          .error()
          .what == "record's phase is not 'apply' or 'rollback'");
  CHECK(decode_line(encode({{"seq", 1}, {"time", "t"}, {"type", "teleport"}}), "j").error().what ==
        "unknown record type 'teleport'");
  CHECK(decode_line(encode({{"seq", 1}, {"time", "t"}, {"type", "run-started"}, {"plan", "p"}, {"format", 9}}), "j")
            .error()
            .what == "journal format 9 is not one this pathwarden reads");
  CHECK(decode_line(encode({{"time", "t"}, {"type", "run-finished"}}), "j").error().what ==
        "record has no sequence number");
  CHECK(decode_line(encode({{"seq", 1},
                            {"time", "t"},
                            {"type", "step-failed"},
                            {"phase", "apply"},
                            {"step", 1},
                            {"error", "x"},
                            {"changed_nothing", "yes"}}),
                    "j")
            .error()
            .what == "step-failed record's 'changed_nothing' is not true or false");
}

TEST_CASE("a step that failed before it changed anything says so by a field, whatever its message") {
  auto r = JournalRecord::step_failed(StepPhase::apply, 2, "the fstab changed since it was observed", true);
  r.stamp(1, "t");
  const auto line = encode_line(r);
  auto back = decode_line(std::string_view(line).substr(0, line.size() - 1), "j");
  REQUIRE(back);
  CHECK(back->changed_nothing());
  CHECK(back->error() == "the fstab changed since it was observed");
  CHECK(line.find("\"changed_nothing\":true") != std::string::npos);
}
