// SPDX-License-Identifier: GPL-3.0-or-later
#include "policy/loader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "diagnostics/suggest.hpp"
#include "policy/storage_path_decoder.hpp"
#include "policy/yaml_schema.hpp"

namespace pw::policy {
namespace {

using namespace schema;

constexpr std::string_view kApiVersion = "pathwarden/v1";

// Policy files are text: NUL bytes or invalid UTF-8 mean a wrong file, not a policy.
std::optional<Diagnostic> binary_problem(std::string_view text, const std::string& file) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = 1;
    if (c == 0) return Diagnostic{{file, line, col}, "not a text file (NUL byte); policy files are UTF-8 YAML"};
    if (c >= 0x80) {
      len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
      bool ok = len != 0 && i + len <= text.size();
      for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
      if (!ok) return Diagnostic{{file, line, col}, "not a text file (invalid UTF-8); policy files are UTF-8 YAML"};
    }
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += len;
  }
  return std::nullopt;
}

// yaml-cpp 0.7 (Debian bookworm) loops forever in LoadAll on some malformed streams, e.g. a
// leading ',' (jbeder/yaml-cpp#1040, fixed upstream by #1318/#1319): the parser hands out the same
// empty document again and again without consuming a token. This event pass stops at the first
// document that starts where the previous one started and reports it as a syntax error.
class ProgressCheck final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  // Throws YAML::ParserException where the stream stops making progress.
  static void run(const std::string& text) {
    std::istringstream in(text);
    YAML::Parser parser(in);
    ProgressCheck check;
    std::optional<int> previous;
    while (parser.HandleNextDocument(check)) {
      if (previous && *previous == check.start_.pos) {
        throw YAML::ParserException(check.start_, "unexpected character where a document should start");
      }
      previous = check.start_.pos;
    }
  }

 private:
  YAML::Mark start_ = YAML::Mark::null_mark();
};

// The kinds one load reads: StoragePath, then the caller's.
std::vector<DocumentKind> kinds_of_load(std::vector<StoragePath>& paths, std::span<const DocumentKind> more_kinds) {
  std::vector<DocumentKind> kinds{storage_path_kind(paths)};
  kinds.insert(kinds.end(), more_kinds.begin(), more_kinds.end());
  return kinds;
}

// "StoragePath or Controller"
std::string either(std::span<const std::string_view> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
  }
  return out;
}

void read_text(std::string_view text, const std::string& file_name, std::span<const DocumentKind> kinds,
               Diagnostics& diags) {
  if (text.size() > kMaxPolicyFileBytes) {
    diags.push_back({{file_name, 0, 0},
                     "file is larger than " + std::to_string(kMaxPolicyFileBytes >> 10) +
                         " KiB; policy files are small YAML documents (is this the right file?)"});
    return;
  }
  if (auto problem = binary_problem(text, file_name)) {
    diags.push_back(*problem);
    return;
  }
  std::vector<YAML::Node> docs;
  try {
    const std::string owned(text);
    ProgressCheck::run(owned);
    docs = YAML::LoadAll(owned);
  } catch (const YAML::Exception& e) {
    // yaml-cpp also throws for nesting deeper than its guard allows; it is a syntax error to us.
    const int line = e.mark.is_null() ? 1 : e.mark.line + 1;
    const int col = e.mark.is_null() ? 1 : e.mark.column + 1;
    diags.push_back({{file_name, line, col}, "YAML syntax error: " + e.msg});
    return;
  }
  std::vector<std::string_view> names;
  for (const auto& k : kinds) names.push_back(k.name);
  std::size_t real_docs = 0;
  for (const auto& doc : docs) {
    if (doc.IsNull()) continue;
    ++real_docs;
    Decoder d(file_name, diags);
    const SourcePos doc_pos = d.pos(doc);
    Section top(d, doc, "document", kDocumentKeys, doc_pos);
    if (!top.valid()) continue;
    auto api = top.require("apiVersion");
    if (api) {
      if (auto v = read_string(d, *api, "apiVersion"); v && *v != kApiVersion) {
        d.error(top.value_pos("apiVersion"),
                "unsupported apiVersion '" + *v + "'; this pathwarden reads '" + std::string(kApiVersion) + "'");
      }
    }
    auto kind_node = top.require("kind");
    if (!kind_node) continue;
    auto kind = read_string(d, *kind_node, "kind");
    if (!kind) continue;
    const auto known = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.name == *kind; });
    if (known != kinds.end()) {
      known->decode(d, top, doc_pos);
    } else {
      d.error(top.value_pos("kind"),
              "unknown kind '" + *kind + "'; expected " + either(names) + did_you_mean(*kind, names));
    }
  }
  if (real_docs == 0) {
    diags.push_back({{file_name, 1, 1}, "file holds no document; expected a " + either(names) + " document"});
  }
}

void load_file(const std::filesystem::path& file, std::span<const DocumentKind> kinds, Diagnostics& diags) {
  const std::string name = file.string();
  // Never through a link (a policy tree comes from a repository anyone with a pull request can
  // change: a link to the token file would put the secret in a diagnostic), never a FIFO or a
  // device (O_NONBLOCK: opening a FIFO must not wait for a writer).
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) {
      diags.push_back({{name, 0, 0},
                       "is a symbolic link: policy files are read only as regular files, never through a link "
                       "(it could point at a secret); put the file itself in the policy tree"});
    } else {
      diags.push_back({{name, 0, 0}, "cannot read file: " + std::string(std::strerror(errno))});
    }
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    diags.push_back({{name, 0, 0}, "is not a regular file (a FIFO, a device, a directory?): not read"});
    return;
  }
  // Read at most one byte past the limit: a 50 MB file is refused without being read whole.
  std::string text(kMaxPolicyFileBytes + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      diags.push_back({{name, 0, 0}, "cannot read file: " + std::string(std::strerror(err))});
      return;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  read_text(text, name, kinds, diags);
}

bool is_policy_file(const std::filesystem::path& p) {
  const auto ext = p.extension();
  return ext == ".yaml" || ext == ".yml";
}

}  // namespace

LoadResult load_text(std::string_view text, const std::string& file_name, std::span<const DocumentKind> more_kinds) {
  LoadResult result;
  read_text(text, file_name, kinds_of_load(result.paths, more_kinds), result.diagnostics);
  return result;
}

LoadResult load_paths(std::span<const std::filesystem::path> inputs, std::span<const DocumentKind> more_kinds) {
  LoadResult result;
  const auto kinds = kinds_of_load(result.paths, more_kinds);
  for (const auto& input : inputs) {
    std::error_code ec;
    const auto status = std::filesystem::status(input, ec);
    if (ec || !std::filesystem::exists(status)) {
      result.diagnostics.push_back({{input.string(), 0, 0}, "no such file or directory"});
      continue;
    }
    if (!std::filesystem::is_directory(status)) {
      load_file(input, kinds, result.diagnostics);
      continue;
    }
    // The tree named on the command line may itself be a link (/etc/pathwarden/policies to a git
    // checkout): it is the operator's choice. Links inside it are not followed.
    std::vector<std::filesystem::path> files;
    std::filesystem::recursive_directory_iterator it(input, std::filesystem::directory_options::skip_permission_denied,
                                                     ec);
    for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      const auto& p = it->path();
      if (p.filename().string().starts_with(".")) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      // A link is listed too, to be refused by name (load_file), never followed.
      if ((it->is_symlink() || it->is_regular_file()) && is_policy_file(p)) files.push_back(p);
    }
    if (ec) result.diagnostics.push_back({{input.string(), 0, 0}, "cannot list directory: " + ec.message()});
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      result.diagnostics.push_back({{input.string(), 0, 0}, "directory holds no *.yaml or *.yml policy file"});
    }
    for (const auto& f : files) load_file(f, kinds, result.diagnostics);
  }
  auto cross = check_policy_set(result.paths);
  std::move(cross.begin(), cross.end(), std::back_inserter(result.diagnostics));
  return result;
}

Diagnostics check_policy_set(std::span<const StoragePath> paths) {
  Diagnostics out;
  std::map<std::string, const StoragePath*> by_name;
  std::map<std::pair<int, std::string>, const StoragePath*> by_mount;
  std::map<std::pair<int, std::string>, const StoragePath*> by_nic;
  std::map<std::pair<int, std::string>, const StoragePath*> by_nic_mtu;
  std::map<std::string, const StoragePath*> by_host;
  std::map<int, const StoragePath*> by_vmid;
  auto at = [](const StoragePath& p, std::string_view field) { return p.position_of(field).to_string(); };
  for (const auto& p : paths) {
    if (auto [it, fresh] = by_name.emplace(p.name, &p); !fresh) {
      out.push_back({p.position_of("metadata.name"),
                     "policy name '" + p.name + "' is already used at " + at(*it->second, "metadata.name")});
    }
    // A Compose volume is claimed by its name (its path is Docker's, known only at observation).
    const char* mount_field = p.mount.compose ? "spec.mount.compose" : "spec.mount.path";
    if (auto [it, fresh] = by_mount.emplace(std::pair{p.guest.vmid, p.mount.display()}, &p); !fresh) {
      out.push_back({p.position_of(mount_field), (p.mount.compose ? "" : "mount path ") + p.mount.display() +
                                                     " of VM " + std::to_string(p.guest.vmid) +
                                                     " is already claimed by policy '" + it->second->name + "' at " +
                                                     at(*it->second, mount_field) + "; one policy per guest mount"});
    }
    if (p.nic.queues) {
      auto [it, fresh] = by_nic.emplace(std::pair{p.guest.vmid, p.nic.device}, &p);
      if (!fresh && it->second->nic.queues != p.nic.queues) {
        out.push_back({p.position_of("spec.nic.queues"),
                       "VM " + std::to_string(p.guest.vmid) + " " + p.nic.device +
                           " wants queues=" + std::to_string(*p.nic.queues) + " here but queues=" +
                           std::to_string(*it->second->nic.queues) + " in policy '" + it->second->name + "' at " +
                           at(*it->second, "spec.nic.queues") + "; a NIC has one queue count"});
      }
    }
    if (p.nic.mtu) {
      auto [it, fresh] = by_nic_mtu.emplace(std::pair{p.guest.vmid, p.nic.device}, &p);
      if (!fresh && it->second->nic.mtu != p.nic.mtu) {
        out.push_back({p.position_of("spec.nic.mtu"), "VM " + std::to_string(p.guest.vmid) + " " + p.nic.device +
                                                          " wants mtu=" + std::to_string(*p.nic.mtu) +
                                                          " here but mtu=" + std::to_string(*it->second->nic.mtu) +
                                                          " in policy '" + it->second->name + "' at " +
                                                          at(*it->second, "spec.nic.mtu") + "; a NIC has one MTU"});
      }
    }
    if (auto [it, fresh] = by_host.emplace(p.guest.host, &p); !fresh && it->second->guest.vmid != p.guest.vmid) {
      out.push_back({p.position_of("spec.guest.host"),
                     "host '" + p.guest.host + "' is VM " + std::to_string(it->second->guest.vmid) + " in policy '" +
                         it->second->name + "' at " + at(*it->second, "spec.guest.vmid") + " but VM " +
                         std::to_string(p.guest.vmid) + " here"});
    }
    if (auto [it, fresh] = by_vmid.emplace(p.guest.vmid, &p); !fresh && it->second->guest.node != p.guest.node) {
      out.push_back({p.position_of("spec.guest.node"), "VM " + std::to_string(p.guest.vmid) + " is on node '" +
                                                           it->second->guest.node + "' in policy '" + it->second->name +
                                                           "' at " + at(*it->second, "spec.guest.node") + " but on '" +
                                                           p.guest.node + "' here; a VM id is unique in a cluster"});
    }
  }
  return out;
}

}  // namespace pw::policy
