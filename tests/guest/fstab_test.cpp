// SPDX-License-Identifier: GPL-3.0-or-later
#include "guest/fstab.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;
using pw::guest::EntryOwner;
using pw::guest::FstabEntrySpec;
using pw::guest::FstabFile;
using pw::guest::FstabLine;

namespace {

const fs::path kCorpus = fs::path(PW_TEST_DATA_DIR) / "guest" / "samples" / "fstab";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<fs::path> corpus() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kCorpus)) {
    if (e.path().extension() == ".fstab") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// libmount (through findmnt) is the reference for how a line is read.
boost::json::array libmount_entries(const fs::path& file) {
  std::string cmd =
      "findmnt --tab-file '" + file.string() + "' -J -o SOURCE,TARGET,FSTYPE,OPTIONS,FREQ,PASSNO 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (auto n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  if (out.empty()) return {};  // findmnt prints nothing for a file without entries
  return boost::json::parse(out).at("filesystems").as_array();
}

std::string temp_file_with(const std::string& content) {
  auto path = fs::temp_directory_path() / ("pw-fstab-test-" + std::to_string(::getpid()) + ".fstab");
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}

FstabEntrySpec movies_spec() {
  return FstabEntrySpec{"10.0.1.31:/volume1/movies", "/mnt/movies", "nfs", {"vers=3", "nconnect=8", "_netdev"}, 0, 0};
}

const EntryOwner kOwner{"movies-10g", "vers=3 on purpose: NFSv4.1 trunking reuses the 1 GbE transport"};

}  // namespace

TEST_CASE("every fstab of the corpus prints back byte for byte") {
  auto files = corpus();
  REQUIRE(files.size() >= 8);
  for (const auto& file : files) {
    INFO(file.filename().string());
    auto content = read_file(file);
    auto parsed = FstabFile::parse(content, file.filename().string());
    CHECK(parsed.print() == content);
  }
}

TEST_CASE("fstab entries are read the way libmount reads them") {
  for (const auto& file : corpus()) {
    INFO(file.filename().string());
    auto ours = FstabFile::parse(read_file(file)).entries();
    auto theirs = libmount_entries(file);
    REQUIRE(ours.size() == theirs.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const auto& t = theirs[i].as_object();
      CHECK(ours[i].spec == t.at("source").as_string().c_str());
      CHECK(ours[i].file == t.at("target").as_string().c_str());
      CHECK(ours[i].vfstype == t.at("fstype").as_string().c_str());
      std::string options = t.at("options").is_null() ? "defaults" : t.at("options").as_string().c_str();
      CHECK(ours[i].options == options);
      CHECK(ours[i].dump.value_or(0) == t.at("freq").to_number<int>());
      CHECK(ours[i].pass.value_or(0) == t.at("passno").to_number<int>());
    }
  }
}

TEST_CASE("an empty option item is skipped, as libmount and mount(8) do") {
  auto file = FstabFile::parse("10.0.0.5:/srv /mnt/a nfs rw,,hard,vers=3, 0 0\n");
  REQUIRE(file.entries().size() == 1);
  CHECK(file.entries()[0].option_list() == std::vector<std::string>{"rw", "hard", "vers=3"});
  CHECK(file.print() == "10.0.0.5:/srv /mnt/a nfs rw,,hard,vers=3, 0 0\n");  // the bytes stay as they are
}

TEST_CASE("lines mount cannot read are kept and reported with their position") {
  auto parsed = FstabFile::parse(read_file(kCorpus / "malformed-lines.fstab"), "guest1:/etc/fstab");
  const auto& d = parsed.diagnostics();
  REQUIRE(d.size() == 4);
  CHECK(d[0].to_string().starts_with("guest1:/etc/fstab:2:1: fstab entry has 1 field(s)"));
  CHECK(d[1].pos.line == 3);
  CHECK(d[2].pos.line == 4);
  CHECK(d[2].pos.column == 32);  // the "zero" dump field
  CHECK(d[2].message.find("'zero' is not a number") != std::string::npos);
  CHECK(d[3].pos.line == 5);  // extra field: mount ignores it, the entry still counts
  CHECK(parsed.lines()[4].kind == FstabLine::Kind::entry);
  CHECK(parsed.lines()[1].kind == FstabLine::Kind::malformed);
}

TEST_CASE("setting the owned entry touches only that entry and adds the owner comment") {
  auto content = read_file(kCorpus / "proxmox-guest-nfs.fstab");
  auto file = FstabFile::parse(content);
  auto spec = movies_spec();
  spec.options = {"vers=3", "nconnect=16", "_netdev", "x-systemd.automount"};
  auto changed = file.set_entry(spec, kOwner);
  REQUIRE(changed);
  CHECK(*changed);

  auto before = FstabFile::parse(content).lines();
  const auto& after = file.lines();
  REQUIRE(after.size() == before.size() + 1);
  auto at = FstabFile::parse(content).find_mount_point("/mnt/movies").front();
  for (std::size_t i = 0; i < at; ++i) CHECK(after[i].text == before[i].text);
  for (std::size_t i = at + 1; i < before.size(); ++i) CHECK(after[i + 1].text == before[i].text);
  CHECK(after[at].text ==
        "# Managed by pathwarden (policy movies-10g): vers=3 on purpose: NFSv4.1 trunking reuses the 1 GbE transport");
  CHECK(after[at + 1].text ==
        "10.0.1.31:/volume1/movies /mnt/movies nfs vers=3,nconnect=16,_netdev,x-systemd.automount 0 0");
  CHECK(file.owner_of("/mnt/movies") == kOwner);

  // The result is what libmount reads.
  auto path = temp_file_with(file.print());
  auto theirs = libmount_entries(path);
  fs::remove(path);
  bool found = false;
  for (const auto& e : theirs) {
    if (e.at("target").as_string() == "/mnt/movies") {
      found = true;
      CHECK(e.at("options").as_string() == "vers=3,nconnect=16,_netdev,x-systemd.automount");
    }
  }
  CHECK(found);
}

TEST_CASE("setting an entry twice changes nothing the second time") {
  auto file = FstabFile::parse(read_file(kCorpus / "debian-installer-style.fstab"));
  REQUIRE(*file.set_entry(movies_spec(), kOwner));
  auto once = file.print();
  auto again = file.set_entry(movies_spec(), kOwner);
  REQUIRE(again);
  CHECK_FALSE(*again);
  CHECK(file.print() == once);
  // And a fresh parse of the written file agrees.
  auto reparsed = FstabFile::parse(once);
  CHECK_FALSE(*reparsed.set_entry(movies_spec(), kOwner));
  CHECK(reparsed.print() == once);
}

TEST_CASE("an entry that already says the same keeps its bytes; only the comment is added") {
  std::string content =
      "UUID=abc / ext4 defaults 0 1\n10.0.1.31:/volume1/movies\t/mnt/movies\tnfs\tvers=3,nconnect=8,_netdev\n";
  auto file = FstabFile::parse(content);
  REQUIRE(*file.set_entry(movies_spec(), kOwner));
  CHECK(file.lines()[2].text == "10.0.1.31:/volume1/movies\t/mnt/movies\tnfs\tvers=3,nconnect=8,_netdev");
  CHECK(file.lines()[1].text.starts_with("# Managed by pathwarden (policy movies-10g)"));
}

TEST_CASE("a rewritten entry keeps the column separators of the old one") {
  std::string content = "10.0.1.31:/volume1/movies\t/mnt/movies\tnfs4\tdefaults\t0\t0\n";
  auto file = FstabFile::parse(content);
  REQUIRE(*file.set_entry(movies_spec(), kOwner));
  CHECK(file.lines()[1].text == "10.0.1.31:/volume1/movies\t/mnt/movies\tnfs\tvers=3,nconnect=8,_netdev\t0\t0");
}

TEST_CASE("a new entry is appended; a missing final newline is added, CRLF files stay CRLF") {
  SECTION("no final newline") {
    auto content = read_file(kCorpus / "no-final-newline.fstab");
    REQUIRE(!content.ends_with('\n'));
    auto file = FstabFile::parse(content);
    REQUIRE(*file.set_entry(movies_spec(), kOwner));
    auto out = file.print();
    CHECK(out.starts_with(content + "\n# Managed by pathwarden"));
    CHECK(out.ends_with("/mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n"));
  }
  SECTION("CRLF") {
    auto content = read_file(kCorpus / "crlf.fstab");
    auto file = FstabFile::parse(content);
    REQUIRE(*file.set_entry(movies_spec(), kOwner));
    auto out = file.print();
    CHECK(out.starts_with(content));
    CHECK(out.ends_with("vers=3,nconnect=8,_netdev 0 0\r\n"));
  }
  SECTION("empty file") {
    auto file = FstabFile::parse("");
    REQUIRE(*file.set_entry(movies_spec(), kOwner));
    CHECK(file.print() ==
          "# Managed by pathwarden (policy movies-10g): vers=3 on purpose: NFSv4.1 trunking reuses the 1 GbE "
          "transport\n10.0.1.31:/volume1/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0\n");
  }
}

TEST_CASE("values with blanks, backslashes, newlines and '#' stay inside their field") {
  FstabEntrySpec spec{"#nas:/Photo Library", "/srv/photo\tlib\nx\\y", "nfs", {"vers=3"}, 0, 0};
  EntryOwner owner{"photos", "line one\nline two\r\n\tthree"};
  auto file = FstabFile::parse("proc /proc proc defaults 0 0\n");
  REQUIRE(*file.set_entry(spec, owner));
  auto out = file.print();
  CHECK(std::count(out.begin(), out.end(), '\n') == 3);  // one line each: proc, comment, entry
  CHECK(file.lines()[1].text == "# Managed by pathwarden (policy photos): line one line two three");
  CHECK(file.lines()[2].text == "\\043nas:/Photo\\040Library /srv/photo\\011lib\\012x\\134y nfs vers=3 0 0");

  auto reparsed = FstabFile::parse(out);
  auto entry = reparsed.entry_for("/srv/photo\tlib\nx\\y");
  REQUIRE(entry);
  CHECK(entry->spec == "#nas:/Photo Library");

  auto path = temp_file_with(out);
  auto theirs = libmount_entries(path);
  fs::remove(path);
  REQUIRE(theirs.size() == 2);
  CHECK(theirs[1].at("source").as_string() == "#nas:/Photo Library");
  CHECK(theirs[1].at("target").as_string() == "/srv/photo\tlib\nx\\y");
}

TEST_CASE("several entries for one mount point are refused with their lines") {
  auto file = FstabFile::parse("a:/x /mnt/m nfs defaults 0 0\n# c\nb:/y /mnt/m nfs defaults 0 0\n", "g:/etc/fstab");
  auto r = file.set_entry(FstabEntrySpec{"c:/z", "/mnt/m", "nfs", {}, 0, 0}, kOwner);
  REQUIRE_FALSE(r);
  CHECK(r.error().to_string() ==
        "g:/etc/fstab:1: 2 entries mount /mnt/m (lines 1, 3) (keep one entry for this mount point by hand; "
        "pathwarden will not guess which one counts)");
}

TEST_CASE("specs that cannot be one fstab entry are refused") {
  auto file = FstabFile::parse("");
  auto bad = [&](FstabEntrySpec s) { return file.set_entry(s, kOwner).error().what; };
  CHECK(bad({"a:/x", "mnt/m", "nfs", {}, 0, 0}) == "mount point 'mnt/m' is not an absolute path");
  CHECK(bad({"", "/mnt/m", "nfs", {}, 0, 0}) == "spec (device) of the fstab entry is empty");
  CHECK(bad({"a:/x", "/mnt/m", "nfs", {"vers=3,nconnect=8"}, 0, 0}) ==
        "mount option 'vers=3,nconnect=8' contains a comma");
  CHECK(bad({"a:/x", "/mnt/m", "nfs", {""}, 0, 0}) == "an empty mount option in the fstab entry for /mnt/m");
  CHECK(file.print().empty());
}

TEST_CASE("removing an owned entry removes its comment and nothing else") {
  auto content = read_file(kCorpus / "debian-mount-examples-mount.fstab");
  auto file = FstabFile::parse(content);
  REQUIRE(*file.set_entry(movies_spec(), kOwner));
  auto removed = file.remove_entry("/mnt/movies");
  REQUIRE(removed);
  CHECK(*removed);
  CHECK(file.print() == content);
  CHECK_FALSE(*file.remove_entry("/mnt/movies"));
}

TEST_CASE("the owner comment reads back") {
  auto line = pw::guest::owner_comment(kOwner);
  CHECK(pw::guest::parse_owner_comment(line) == kOwner);
  CHECK(pw::guest::parse_owner_comment("# some other comment") == std::nullopt);
  CHECK(pw::guest::parse_owner_comment(pw::guest::owner_comment({"p", ""})) == EntryOwner{"p", ""});
}

TEST_CASE("take_entry composes two policies' entries and puts one back alone, byte for byte") {
  // Over every file of the corpus (CRLF, no final newline, comments, odd layouts): two entries
  // set one by one equal the two composed with take_entry; putting one back from the observed
  // file gives exactly the file with only the other's entry.
  const FstabEntrySpec a{"nas:/a", "/mnt/pw a", "nfs", {"vers=3"}, 0, 0};
  const FstabEntrySpec b{"[2001:db8::1]:/b", "/mnt/#b", "nfs", {"vers=4.2", "nconnect=4"}, 0, 0};
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    INFO(entry.path().filename().string());
    const auto observed = read_file(entry.path());
    const auto base = FstabFile::parse(observed);
    auto only_a = base, only_b = base, both = base;
    if (!only_a.set_entry(a, {"pa", "first"}) || !only_b.set_entry(b, {"pb", "second"})) continue;  // duplicates
    REQUIRE(both.set_entry(a, {"pa", "first"}));
    REQUIRE(both.set_entry(b, {"pb", "second"}));
    auto composed = base;
    REQUIRE(composed.take_entry(only_a, a.file));
    REQUIRE(composed.take_entry(only_b, b.file));
    CHECK(composed.print() == both.print());
    auto single = base;
    REQUIRE(single.take_entry(only_a, a.file));
    CHECK(single.print() == only_a.print());  // one writer: the planner's own write, exactly

    auto undone = FstabFile::parse(composed.print());
    REQUIRE(undone.take_entry(base, a.file));
    CHECK(undone.print() == only_b.print());
    CHECK_FALSE(*undone.take_entry(base, a.file));  // twice: nothing more to do
  }
}

TEST_CASE("take_entry puts a hand-written entry back where it stood, the line after it kept apart") {
  // The adopted entry was the last line, without a newline; another entry followed it since.
  const std::string observed = "UUID=r / ext4 defaults 0 1\nnas:/tv /mnt/tv nfs vers=4.2 0 0";
  const auto base = FstabFile::parse(observed);
  auto adopted = base;
  REQUIRE(adopted.set_entry({"nas:/tv", "/mnt/tv", "nfs", {"vers=4.2"}, 0, 0}, {"tv", "adopted"}));
  REQUIRE(adopted.set_entry({"nas:/m", "/mnt/m", "nfs", {"vers=3"}, 0, 0}, {"m", "new"}));
  auto back = FstabFile::parse(adopted.print());
  REQUIRE(back.take_entry(base, "/mnt/tv"));
  const auto text = back.print();
  CHECK(text.starts_with("UUID=r / ext4 defaults 0 1\nnas:/tv /mnt/tv nfs vers=4.2 0 0\n# "));
  CHECK(FstabFile::parse(text).entry_for("/mnt/m"));
  CHECK_FALSE(FstabFile::parse(text).owner_of("/mnt/tv"));
}
