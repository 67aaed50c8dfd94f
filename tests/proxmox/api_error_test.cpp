// SPDX-License-Identifier: GPL-3.0-or-later
// Pure parts of the client: error mapping, response bodies, URLs, fingerprints, task ids.
#include "proxmox/api_error.hpp"

#include <catch2/catch.hpp>

#include "proxmox/api_json.hpp"
#include "proxmox/client_options.hpp"

using namespace pw::proxmox;

TEST_CASE("HTTP errors map to typed errors") {
  const std::string where = "PUT https://pve1:8006/api2/json/nodes/pve1/qemu/101/config";

  auto digest =
      error_from_response(500, "checksum mismatch (file change by other user?)",
                          R"({"data":null,"message":"checksum mismatch (file change by other user?)\n"})", where);
  CHECK(digest.kind == ApiErrorKind::digest_conflict);
  CHECK(digest.where == where);
  CHECK_THAT(digest.hint, Catch::Contains("re-read"));
  CHECK_FALSE(is_retryable_read_error(digest));

  auto locked = error_from_response(500, "VM is locked (backup)", R"({"data":null})", where);
  CHECK(locked.kind == ApiErrorKind::locked);
  CHECK(locked.lock == "backup");

  auto busy =
      error_from_response(500, "can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout", "", where);
  CHECK(busy.kind == ApiErrorKind::busy);

  auto perm =
      error_from_response(403, "Permission check failed (/vms/101, VM.Config.Network)", R"({"data":null})", where);
  CHECK(perm.kind == ApiErrorKind::permission);
  CHECK(perm.permission_path == "/vms/101");
  CHECK(perm.missing_privilege == "VM.Config.Network");

  auto auth = error_from_response(401, "No ticket", "", where);  // the auth check answers with no body
  CHECK(auth.kind == ApiErrorKind::auth);
  CHECK(auth.message == "No ticket");

  auto param = error_from_response(
      400, "Parameter verification failed.",
      R"({"data":null,"errors":{"net0":"invalid format - format error\nnet0.queues: value must have a maximum value of 64\n"},"message":"Parameter verification failed.\n"})",
      where);
  CHECK(param.kind == ApiErrorKind::parameter);
  CHECK(param.field_errors.at("net0") ==
        "invalid format - format error net0.queues: value must have a maximum value of 64");
  CHECK_THAT(param.to_string(), Catch::StartsWith(where + ": HTTP 400: Parameter verification failed.; net0: "));

  auto missing = error_from_response(500, "Configuration file 'nodes/pve1/qemu-server/999.conf' does not exist",
                                     R"({"data":null})", where);
  CHECK(missing.kind == ApiErrorKind::not_found);

  auto unavailable = error_from_response(503, "Service Unavailable", "", where);
  CHECK(unavailable.kind == ApiErrorKind::http);
  CHECK(is_retryable_read_error(unavailable));

  auto silent = error_from_response(500, "", R"({"data":null})", where);
  CHECK(silent.kind == ApiErrorKind::http);
  CHECK_THAT(silent.hint, Catch::Contains("lock timeout"));

  auto crlf = error_from_response(500, "first\r\nsecond", "", where);
  CHECK(crlf.message.find('\r') == std::string::npos);
  CHECK(crlf.message.find('\n') == std::string::npos);

  auto unknown = error_from_response(501, "Method 'GET /nodes/pve1/nope' not implemented", "", where);
  CHECK(unknown.kind == ApiErrorKind::not_found);
}

TEST_CASE("response bodies map to typed values, numbers or strings alike") {
  auto guests = json::parse_guests(
      R"({"data":[{"id":"qemu/101","type":"qemu","vmid":101,"node":"pve1","name":"web","status":"running","template":0,"lock":"backup"},
                  {"id":"lxc/200","type":"lxc","vmid":"200","node":"pve2","status":"stopped"},
                  {"id":"node/pve1","type":"node","node":"pve1"}]})");
  REQUIRE(guests);
  REQUIRE(guests->size() == 2);
  CHECK((*guests)[0].ref == VmRef{"pve1", 101});
  CHECK((*guests)[0].lock == "backup");
  CHECK((*guests)[1].type == GuestType::lxc);
  CHECK((*guests)[1].ref.vmid == 200);

  auto config = json::parse_config(
      R"({"data":{"cores":2,"memory":"2048","net1":"virtio=BC:24:11:2A:3B:4C,bridge=vmbr1","net0":"virtio=BC:24:11:2A:3B:4D,bridge=vmbr0","net10":"e1000=BC:24:11:2A:3B:4E","onboot":1,"digest":"abc"}})",
      VmRef{"pve1", 101}, true);
  REQUIRE(config);
  CHECK(config->digest == "abc");
  CHECK(config->get("cores") == "2");
  CHECK(config->get("memory") == "2048");
  CHECK_FALSE(config->get("digest"));
  auto nics = config->nics();
  REQUIRE(nics.size() == 3);
  CHECK(nics[0].first == "net0");
  CHECK(nics[1].first == "net1");
  CHECK(nics[2].first == "net10");

  CHECK_FALSE(json::parse_config(R"({"data":{"cores":2}})", VmRef{"pve1", 101}, true));  // no digest
  CHECK_FALSE(json::parse_config("<html>proxy</html>", VmRef{"pve1", 101}, true));

  auto pending = json::parse_pending(
      R"({"data":[{"key":"net1","value":"virtio=A","pending":"virtio=B"},{"key":"net2","value":"x","delete":1},{"key":"name","value":"web"},{"key":"digest","value":"d1"}]})",
      VmRef{"pve1", 101});
  REQUIRE(pending);
  CHECK(pending->digest == "d1");
  CHECK(pending->changed_keys() == std::vector<std::string>{"net1", "net2"});

  auto task = json::parse_task_status(
      R"({"data":{"upid":"UPID:pve1:0000A1B2:0001C3D4:65F0A1B2:qmreboot:101:root@pam!pw:","status":"stopped","exitstatus":"WARNINGS: 2"}})");
  REQUIRE(task);
  CHECK(task->succeeded());
  CHECK(task->warnings() == 2);
  auto failed = json::parse_task_status(
      R"j({"data":{"upid":"UPID:pve1:0000A1B2:0001C3D4:65F0A1B2:qmstart:101:root@pam:","status":"stopped","exitstatus":"VM is locked (backup)"}})j");
  REQUIRE(failed);
  CHECK_FALSE(failed->succeeded());

  auto none = json::parse_optional_upid(R"({"data":null})");
  REQUIRE(none);
  CHECK_FALSE(none->has_value());
}

TEST_CASE("task ids") {
  auto upid = Upid::parse("UPID:pve1:0000A1B2:0001C3D4:65F0A1B2:qmreboot:101:root@pam!pw:");
  REQUIRE(upid);
  CHECK(upid->node == "pve1");
  CHECK(upid->type == "qmreboot");
  CHECK(upid->id == "101");
  CHECK(upid->user == "root@pam!pw");
  CHECK_FALSE(Upid::parse("UPID:pve1:xyz:0001C3D4:65F0A1B2:qmreboot:101:root@pam:"));
  CHECK_FALSE(Upid::parse("not a upid"));
}

TEST_CASE("API URLs") {
  auto ep = parse_api_url("https://pve1.example.com");
  REQUIRE(ep);
  CHECK(ep->host == "pve1.example.com");
  CHECK(ep->port == "8006");
  CHECK(ep->base_path == "/api2/json");
  auto v6 = parse_api_url("https://[2001:db8::1]:443/api2/json/");
  REQUIRE(v6);
  CHECK(v6->host == "2001:db8::1");
  CHECK(v6->port == "443");
  CHECK(v6->url() == "https://[2001:db8::1]:443");
  CHECK_THAT(parse_api_url("http://pve1:8006").error().what, Catch::Contains("plain http"));
  CHECK_THAT(parse_api_url("https://pve1:99999").error().what, Catch::Contains("port"));
  CHECK_THAT(parse_api_url("https://root:pw@pve1").error().what, Catch::Contains("credentials"));
  CHECK_THAT(parse_api_url("https://pve1/other").error().what, Catch::Contains("unexpected path"));
}

TEST_CASE("fingerprints") {
  const std::string colon =
      "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89";
  CHECK(normalize_fingerprint(colon) == colon);
  CHECK(normalize_fingerprint("abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789") == colon);
  CHECK_THAT(normalize_fingerprint("AB:CD").error().what, Catch::Contains("32 octets"));
  CHECK_THAT(normalize_fingerprint(colon.substr(0, 59)).error().hint, Catch::Contains("not SHA-1"));
  CHECK_THAT(normalize_fingerprint("ZZ" + colon.substr(2)).error().what, Catch::Contains("not hex"));
}

TEST_CASE("errors render as where: what (hint) and never carry secrets they were not given") {
  ApiError e;
  e.kind = ApiErrorKind::tls;
  e.where = "GET https://pve1:8006/api2/json/version";
  e.message = "the server certificate is not trusted: self-signed certificate";
  e.hint = "pin it";
  e.attempts = 1;
  CHECK(e.to_string() ==
        "GET https://pve1:8006/api2/json/version: the server certificate is not trusted: self-signed certificate (pin "
        "it)");
  CHECK(to_string(ApiErrorKind::digest_conflict) == "digest-conflict");
}
