// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/journal.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "temp_dir.hpp"

using namespace pw::journal;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

const TimePoint kStart = std::chrono::sys_days{std::chrono::year{2024} / 5 / 5} + 2h;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::filesystem::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

// The journal of a run that set a NIC's queues, wrote fstab, and crashed while re-mounting.
Journal write_interrupted_run(JournalStore& store, ManualClock& clock) {
  auto j = Journal::start(store, clock, "run-1", "plan-abc", {{"policies", json::array{"movies-10g"}}});
  REQUIRE(j);
  clock.advance(1s);
  REQUIRE(j->step_begin({StepPhase::apply,
                         0,
                         "set-nic-queues",
                         "pve1/101",
                         {{"previous", "virtio=52:54:00:12:34:02,bridge=vmbr1"}, {"digest", "d1"}}}));
  REQUIRE(j->step_done(StepPhase::apply, 0, {{"digest", "d2"}}));
  REQUIRE(j->step_begin({StepPhase::apply, 1, "ensure-fstab-entry", "pve1/101", {{"fstab_sha256", "aa"}}}));
  REQUIRE(j->step_done(StepPhase::apply, 1, {{"backup", "/etc/fstab.123~"}}));
  REQUIRE(j->step_begin({StepPhase::apply, 2, "remount", "pve1/101", {{"mounts", json::array{"/mnt/a", "/mnt/b"}}}}));
  return std::move(*j);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A state directory in a temp dir with a file journal store and a fixed clock.
struct FileJournals {
  pw::testing::TempDir tmp;
  StateDir state = StateDir::open(tmp.path() / "state").value();
  FileJournalStore store{state};
  ManualClock clock{kStart};
};

}  // namespace

TEST_CASE("a finished run round-trips through the file journal") {
  FileJournals f;
  auto& store = f.store;
  auto& clock = f.clock;
  {
    auto j = write_interrupted_run(store, clock);
    REQUIRE(j.step_done(StepPhase::apply, 2));
    REQUIRE(j.run_finished({{"movies-10g", "verified"}}));
    CHECK(j.last_seq() == 8);
  }
  const auto path = store.path_of("run-1");
  CHECK(pw::testing::mode_of(path) == 0600);
  const auto text = slurp(path);
  CHECK(lines_of(text).size() == 8);
  CHECK(text.find("\"plan\":\"plan-abc\"") != std::string::npos);

  auto run = replay("run-1", text, path.string());
  REQUIRE(run);
  CHECK(run->plan_id == "plan-abc");
  CHECK(run->started_at == "2024-05-05T02:00:00.000Z");
  CHECK(run->info.at("policies").as_array().size() == 1);
  CHECK(run->finished);
  CHECK_FALSE(run->interrupted());
  CHECK(run->verdicts.at("movies-10g") == "verified");
  REQUIRE(run->steps.size() == 3);
  CHECK(run->completed_steps() == std::vector<std::size_t>{0, 1, 2});
  CHECK(run->steps[0].kind == "set-nic-queues");
  CHECK(run->steps[0].guest == "pve1/101");
  CHECK(run->steps[0].data.at("previous") == "virtio=52:54:00:12:34:02,bridge=vmbr1");
  CHECK(run->steps[0].result.at("digest") == "d2");
  CHECK(run->steps[1].result.at("backup") == "/etc/fstab.123~");
  CHECK(run->steps[0].began_at == "2024-05-05T02:00:01.000Z");
  CHECK(run->in_flight().empty());

  auto scan = scan_journals(store);
  CHECK(scan.finished == 1);
  CHECK(scan.interrupted.empty());
  CHECK(scan.unreadable.empty());
}

TEST_CASE("an interrupted run tells recover what completed and what was in flight") {
  InMemoryJournalStore store;
  ManualClock clock(kStart);
  { auto j = write_interrupted_run(store, clock); }  // the process dies here
  auto run = replay("run-1", store.bytes("run-1"), "memory:run-1");
  REQUIRE(run);
  CHECK(run->interrupted());
  CHECK(run->completed_steps() == std::vector<std::size_t>{0, 1});
  REQUIRE(run->in_flight().size() == 1);
  CHECK(run->in_flight()[0]->step == 2);
  CHECK(run->in_flight()[0]->kind == "remount");
  CHECK(run->in_flight()[0]->data.at("mounts").as_array().size() == 2);

  auto scan = scan_journals(store);
  REQUIRE(scan.interrupted.size() == 1);
  CHECK(scan.interrupted[0].run_id == "run-1");
}

TEST_CASE("a rollback in progress is replayed with its inverse steps") {
  InMemoryJournalStore store;
  ManualClock clock(kStart);
  {
    auto j = write_interrupted_run(store, clock);
    REQUIRE(j.step_done(StepPhase::apply, 2));
    REQUIRE(j.rollback_begin("wrong-path: 101% of the probe on link1"));
    REQUIRE(j.step_begin({StepPhase::rollback, 2, "remount", "pve1/101", {}}));
    REQUIRE(j.step_done(StepPhase::rollback, 2));
    REQUIRE(j.step_begin({StepPhase::rollback, 1, "ensure-fstab-entry", "pve1/101", {}}));
    REQUIRE(j.step_failed(StepPhase::rollback, 1, "ssh: connection refused"));
  }
  auto run = replay("run-1", store.bytes("run-1"), "m");
  REQUIRE(run);
  CHECK(run->rollback == RollbackState::in_progress);
  CHECK(run->rollback_reason == "wrong-path: 101% of the probe on link1");
  REQUIRE(run->rollback_steps.size() == 2);
  CHECK(run->find(StepPhase::rollback, 2)->state == StepState::done);
  CHECK(run->find(StepPhase::rollback, 1)->state == StepState::failed);
  CHECK(run->find(StepPhase::rollback, 1)->error == "ssh: connection refused");
  CHECK(run->find(StepPhase::apply, 2)->state == StepState::done);
  CHECK(run->in_flight().empty());
}

TEST_CASE("a torn last record is ignored on replay and cut before resuming") {
  FileJournals f;
  auto& store = f.store;
  auto& clock = f.clock;
  { auto j = write_interrupted_run(store, clock); }
  const auto path = store.path_of("run-1");
  const std::string intact = slurp(path);
  const auto last_start = intact.rfind('\n', intact.size() - 2) + 1;  // the step-begin of step 2

  SECTION("cut mid-record (power loss during the write)") {
    spit(path, intact.substr(0, last_start + 30));
  }
  SECTION("the whole line but no newline") {
    spit(path, intact.substr(0, intact.size() - 1));
  }
  SECTION("the file grew but its last block is zeros") {
    spit(path, intact.substr(0, last_start) + std::string(300, '\0'));
  }
  SECTION("garbage with a newline, as the last line") {
    spit(path, intact.substr(0, last_start) + "0badc0de {\"seq\":6,\"ty\n");
  }
  const std::string torn = slurp(path);
  const auto readout = read_journal(torn, path.string());
  REQUIRE(readout.torn_tail);
  CHECK(readout.torn_tail->line == 6);
  CHECK(readout.corrupt.empty());
  CHECK(readout.valid_size == last_start);

  auto run = replay("run-1", readout, path.string());
  REQUIRE(run);
  // The torn step-begin never became durable, so step 2 never started.
  CHECK(run->steps.size() == 2);
  CHECK(run->in_flight().empty());
  CHECK(run->completed_steps() == std::vector<std::size_t>{0, 1});
  REQUIRE(run->torn_tail);

  RunReplay before;
  auto resumed = Journal::resume(store, clock, "run-1", &before);
  REQUIRE(resumed);
  CHECK(before.completed_steps() == std::vector<std::size_t>{0, 1});
  REQUIRE(resumed->rollback_begin("recover: undo an interrupted run"));
  REQUIRE(resumed->rollback_done(true));
  REQUIRE(resumed->run_finished({{"movies-10g", "rolled-back"}}));

  const std::string healed = slurp(path);
  CHECK(healed.substr(0, last_start) == intact.substr(0, last_start));
  const auto after = read_journal(healed, path.string());
  CHECK_FALSE(after.torn_tail);
  CHECK(after.corrupt.empty());
  auto finished = replay("run-1", after, path.string());
  REQUIRE(finished);
  CHECK(finished->finished);
  CHECK(finished->resumed == 1);
  CHECK(finished->rollback == RollbackState::done);
  CHECK(finished->last_seq == 9);
}

TEST_CASE("a corrupted middle record is reported with its line, never dropped silently") {
  FileJournals f;
  auto& store = f.store;
  auto& clock = f.clock;
  { auto j = write_interrupted_run(store, clock); }
  const auto path = store.path_of("run-1");
  std::string text = slurp(path);
  // Flip one bit inside the third record (step-done of step 0): "d2" becomes "d3".
  const auto at = text.find("\"d2\"");
  REQUIRE(at != std::string::npos);
  text[at + 2] = '3';
  spit(path, text);

  const auto readout = read_journal(text, path.string());
  REQUIRE(readout.corrupt.size() == 1);
  CHECK(readout.corrupt[0].line == 3);
  CHECK(readout.corrupt[0].reason == "record checksum mismatch");
  CHECK(readout.records.size() == 5);
  CHECK_FALSE(readout.torn_tail);

  auto run = replay("run-1", readout, path.string());
  REQUIRE_FALSE(run);
  CHECK(run.error().where == path.string() + ":3");
  CHECK(run.error().what == "record checksum mismatch in the middle of the journal");
  CHECK(run.error().hint.find("by hand") != std::string::npos);

  auto resumed = Journal::resume(store, clock, "run-1");
  REQUIRE_FALSE(resumed);
  CHECK(resumed.error().where == path.string() + ":3");
  CHECK(slurp(path) == text);  // nothing appended to a journal that cannot be trusted

  auto scan = scan_journals(store);
  CHECK(scan.interrupted.empty());
  REQUIRE(scan.unreadable.size() == 1);
  CHECK(scan.unreadable[0].where == path.string() + ":3");
}

TEST_CASE("records that contradict each other are refused") {
  InMemoryJournalStore store;
  ManualClock clock(kStart);
  auto j = Journal::start(store, clock, "r", "p");
  REQUIRE(j);
  auto replay_error = [&] {
    auto run = replay("r", store.bytes("r"), "r");
    REQUIRE_FALSE(run);
    return run.error();
  };
  SECTION("done for a step that never began") {
    REQUIRE(j->step_done(StepPhase::apply, 4));
    CHECK(replay_error().what == "step-done for apply step 4, which is not in flight");
    CHECK(replay_error().where == "r:2");
  }
  SECTION("begun twice without recover in between") {
    REQUIRE(j->step_begin({StepPhase::apply, 0, "k", "", {}}));
    REQUIRE(j->step_begin({StepPhase::apply, 0, "k", "", {}}));
    CHECK(replay_error().what == "apply step 0 began again while still in flight");
  }
  SECTION("records after run-finished") {
    REQUIRE(j->run_finished({}));
    REQUIRE(j->rollback_begin("late"));
    CHECK(replay_error().what == "rollback-begin after run-finished");
  }
  SECTION("a missing record (sequence gap)") {
    REQUIRE(j->step_begin({StepPhase::apply, 0, "k", "", {}}));
    REQUIRE(j->step_done(StepPhase::apply, 0));
    auto& bytes = store.bytes("r");
    const auto second = bytes.find('\n') + 1;
    bytes.erase(second, bytes.find('\n', second) + 1 - second);
    CHECK(replay_error().what == "record has sequence number 3, expected 2");
  }
}

TEST_CASE("retrying a failed step, or an in-flight one after recover, is allowed") {
  InMemoryJournalStore store;
  ManualClock clock(kStart);
  {
    auto j = Journal::start(store, clock, "r", "p");
    REQUIRE(j);
    REQUIRE(j->step_begin({StepPhase::apply, 0, "set-nic-queues", "g", {}}));
    REQUIRE(j->step_failed(StepPhase::apply, 0, "HTTP 500"));
    REQUIRE(j->step_begin({StepPhase::apply, 0, "set-nic-queues", "g", {{"attempt", 2}}}));
  }
  auto resumed = Journal::resume(store, clock, "r");
  REQUIRE(resumed);
  REQUIRE(resumed->step_begin({StepPhase::apply, 0, "set-nic-queues", "g", {{"attempt", 3}}}));
  REQUIRE(resumed->step_done(StepPhase::apply, 0));
  auto run = replay("r", store.bytes("r"), "r");
  REQUIRE(run);
  REQUIRE(run->steps.size() == 1);
  CHECK(run->steps[0].state == StepState::done);
  CHECK(run->steps[0].data.at("attempt") == 3);
}

TEST_CASE("journals refuse what cannot be right") {
  InMemoryJournalStore store;
  ManualClock clock(kStart);
  CHECK_FALSE(Journal::start(store, clock, "../etc/passwd", "p"));
  CHECK_FALSE(Journal::start(store, clock, ".hidden", "p"));
  CHECK_FALSE(Journal::start(store, clock, "ok", ""));
  REQUIRE(Journal::start(store, clock, "ok", "p"));
  CHECK(Journal::start(store, clock, "ok", "p").error().what == "a journal for this run exists already");
  auto finished = Journal::start(store, clock, "done", "p");
  REQUIRE(finished->run_finished({}));
  CHECK(Journal::resume(store, clock, "done").error().what == "the run finished; there is nothing to resume");

  const auto id = make_run_id(clock);
  CHECK(check_run_id(id));
  CHECK(id.starts_with("20240505T020000.000Z-"));
}

TEST_CASE("a failed append is reported and leaves the journal consistent") {
  InMemoryJournalStore store;
  ManualClock clock(kStart);
  auto j = Journal::start(store, clock, "r", "p");
  REQUIRE(j);
  store.fail_appends("No space left on device");
  auto s = j->step_begin({StepPhase::apply, 0, "k", "", {}});
  REQUIRE_FALSE(s);
  CHECK(s.error().what == "No space left on device");
  store.fail_appends(std::nullopt);
  REQUIRE(j->step_begin({StepPhase::apply, 0, "k", "", {}}));
  auto run = replay("r", store.bytes("r"), "r");
  REQUIRE(run);
  CHECK(run->last_seq == 2);
}

TEST_CASE("a write cut short by the file size limit is taken back, not left mid-file") {
  FileJournals f;
  auto& store = f.store;
  auto& clock = f.clock;
  { REQUIRE(Journal::start(store, clock, "r", "p")); }
  const auto path = store.path_of("r");

  // In a child, so the lowered limit and the ignored SIGXFSZ stay there.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    auto j = Journal::resume(store, clock, "r");
    if (!j) ::_exit(1);
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    const rlimit low{static_cast<rlim_t>(std::filesystem::file_size(path) + 20), limit.rlim_max};
    ::setrlimit(RLIMIT_FSIZE, &low);
    // 20 bytes of this record fit, the rest fails: the partial line must be taken back.
    if (j->step_begin({StepPhase::apply, 0, "set-nic-queues", "g", {{"previous", std::string(200, 'x')}}})) ::_exit(2);
    ::setrlimit(RLIMIT_FSIZE, &limit);
    if (!j->step_begin({StepPhase::apply, 0, "set-nic-queues", "g", {}})) ::_exit(3);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  const auto readout = read_journal(slurp(path), path.string());
  CHECK(readout.corrupt.empty());
  CHECK_FALSE(readout.torn_tail);
  auto run = replay("r", readout, path.string());
  REQUIRE(run);
  CHECK(run->resumed == 1);
  CHECK(run->last_seq == 3);
  REQUIRE(run->in_flight().size() == 1);
  CHECK(run->in_flight()[0]->data.empty());
}

TEST_CASE("a journal created but never written is an empty, harmless run") {
  InMemoryJournalStore store;
  REQUIRE(store.create("r"));
  auto run = replay("r", store.bytes("r"), "r");
  REQUIRE(run);
  CHECK(run->plan_id.empty());
  CHECK(run->steps.empty());
  ManualClock clock(kStart);
  CHECK(Journal::resume(store, clock, "r").error().hint == "nothing was changed; remove the journal");
}

TEST_CASE("a scan for unfinished runs tells finished journals by their last record alone") {
  FileJournals f;
  auto& store = f.store;
  auto& clock = f.clock;
  auto finish = [&](std::string_view id, json::object verdicts) {
    auto j = Journal::start(store, clock, id, "plan-abc");
    REQUIRE(j);
    REQUIRE(j->step_begin({StepPhase::apply, 0, "set-nic", "media-vm", {{"digest", "d1"}}}));
    REQUIRE(j->step_done(StepPhase::apply, 0, {{"digest", "d2"}}));
    REQUIRE(j->run_finished(std::move(verdicts)));
  };
  // Finished, then damaged in the middle: recover's full scan reports it; the scan for unfinished
  // runs reads its last record, run-finished, and nothing before it.
  finish("damaged", {{"policy", "movies-10g"}, {"verdict", "verified"}});
  auto text = slurp(store.path_of("damaged"));
  text[text.find("\"d2\"") + 2] = '3';
  spit(store.path_of("damaged"), text);
  // Finished with a last record longer than the tail read: read whole, still finished.
  finish("long", {{"policy", std::string(5000, 'p')}, {"verdict", "verified"}});
  // Interrupted, and finished but its run-finished torn by power loss: both unfinished.
  { auto j = write_interrupted_run(store, clock); }
  finish("torn", {{"policy", "movies-10g"}, {"verdict", "verified"}});
  text = slurp(store.path_of("torn"));
  text.resize(text.size() - 20);
  spit(store.path_of("torn"), text);

  auto every = scan_journals(store, ScanScope::every_journal);
  CHECK(every.finished == 1);
  CHECK(every.unreadable.size() == 1);
  CHECK(every.interrupted.size() == 2);

  auto unfinished = scan_journals(store, ScanScope::unfinished_only);
  CHECK(unfinished.finished == 2);
  CHECK(unfinished.unreadable.empty());
  REQUIRE(unfinished.interrupted.size() == 2);
  CHECK(unfinished.interrupted[0].run_id == "run-1");
  CHECK(unfinished.interrupted[1].run_id == "torn");
  CHECK(unfinished.interrupted[1].steps.size() == 1);

  // The tail of a file journal is its last bytes; a shorter journal is given whole.
  auto file = store.open("long").value();
  const auto all = file->read_all().value();
  CHECK(file->read_tail(100).value() == all.substr(all.size() - 100));
  CHECK(file->read_tail(all.size() + 10).value() == all);
}
