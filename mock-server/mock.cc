#include "mock-server/mock.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "common/fileutil.h"
#include "common/ipaddr.h"
#include "common/log.h"
#include "common/uuid.h"
#include "mizarmp-client/types.h"
#include "mock-server/agent.h"
#include "mock-server/pool.h"

namespace mizarmp::mock {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Where a port is in its life. kActivating is reported as pending: the agent is plugging it.
enum class State { kPending, kActivating, kReady, kFailed };

struct PortRec {
  uint64_t seq = 0;  // creation order; also tells a re-created port from the one it replaced
  client::Port port;
  json extra = json::object();  // the request's own fields, echoed back under ours
  Clock::time_point created;
  int gets = 0;  // GET port/{id} answered so far
  State state = State::kPending;
  bool never_ready = false;
  bool fail_ready = false;
  std::vector<IpAddress> ips;
  std::string host_name;  // reserved host-end name (activating or plugged)
  bool plugged = false;   // the agent's veth exists
  std::string error;      // why the port failed
};

// One HTTP answer.
struct Reply {
  int status = 200;
  json body;
};

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

Reply ErrorReply(int status, std::string message) {
  return Reply{status, json{{"error", std::move(message)}}};
}

std::string Trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Parses a request body, naming the problem on failure.
Result<json> ParseBody(const std::string& body) {
  if (Trim(body).empty()) return InvalidArgumentError("request body is empty; expected JSON");
  try {
    return json::parse(body);
  } catch (const json::parse_error& e) {
    return InvalidArgumentError(std::string("request body is not valid JSON: ") + e.what());
  }
}

// --- Faults as JSON ------------------------------------------------------------------------

json FaultsToJson(const Faults& f) {
  return json{{"fail_creates", f.fail_creates},
              {"fail_deletes", f.fail_deletes},
              {"fail_gets", f.fail_gets},
              {"never_ready", f.never_ready},
              {"fail_ready", f.fail_ready},
              {"delay_ms", f.delay_ms},
              {"close_connections", f.close_connections},
              {"truncate_json", f.truncate_json},
              {"reject_creates", f.reject_creates}};
}

Result<Faults> FaultsFromJson(const json& j) {
  if (!j.is_object()) {
    return InvalidArgumentError(std::string("faults document must be a JSON object, got ") +
                                j.type_name());
  }
  Faults f;
  const std::map<std::string, int*> ints = {{"fail_creates", &f.fail_creates},
                                            {"fail_deletes", &f.fail_deletes},
                                            {"fail_gets", &f.fail_gets},
                                            {"delay_ms", &f.delay_ms},
                                            {"close_connections", &f.close_connections},
                                            {"truncate_json", &f.truncate_json},
                                            {"reject_creates", &f.reject_creates}};
  const std::map<std::string, bool*> bools = {{"never_ready", &f.never_ready},
                                              {"fail_ready", &f.fail_ready}};
  for (const auto& [key, value] : j.items()) {
    if (auto it = ints.find(key); it != ints.end()) {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
          value.get<int64_t>() > 1000000000) {
        return InvalidArgumentError("fault \"" + key + "\" must be a non-negative integer, got " +
                                    Dump(value));
      }
      *it->second = static_cast<int>(value.get<int64_t>());
    } else if (auto bt = bools.find(key); bt != bools.end()) {
      if (!value.is_boolean()) {
        return InvalidArgumentError("fault \"" + key + "\" must be a boolean, got " + Dump(value));
      }
      *bt->second = value.get<bool>();
    } else {
      std::string known;
      const json all = FaultsToJson(Faults{});
      for (auto k = all.begin(); k != all.end(); ++k) {
        known += (known.empty() ? "" : ", ") + k.key();
      }
      return InvalidArgumentError("unknown fault \"" + key + "\" (known: " + known + ")");
    }
  }
  return f;
}

// --- Dropping a connection without an answer -------------------------------------------------

std::string SockaddrIp(const sockaddr_storage& ss, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    *port = ntohs(a->sin_port);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    *port = ntohs(a->sin6_port);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
  } else {
    *port = -1;
  }
  return buf;
}

// The server-side socket of the connection `req` arrived on: the one whose local port is the
// request's local port and whose peer is the request's remote address and port.
int FindConnectionFd(const httplib::Request& req) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/fd"), closedir);
  if (!dir) return -1;
  const int self = dirfd(dir.get());
  while (dirent* e = readdir(dir.get())) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == self) continue;
    sockaddr_storage local{}, peer{};
    socklen_t len = sizeof(local);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      continue;
    }
    int local_port = -1;
    SockaddrIp(local, &local_port);
    if (local_port != req.local_port) continue;
    len = sizeof(peer);
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
      continue;
    }
    int peer_port = -1;
    const std::string peer_ip = SockaddrIp(peer, &peer_port);
    if (peer_port != req.remote_port) continue;
    if (peer_ip != req.remote_addr && peer_ip != "::ffff:" + req.remote_addr) continue;
    return static_cast<int>(fd);
  }
  return -1;
}

// Closes the client's connection before any byte of an answer is sent. The socket is shut down
// (the client sees the connection close with no response) and its descriptor number is pointed
// at /dev/null, so the server thread that still owns the number writes its answer nowhere and
// closes it as usual, with no SIGPIPE and no descriptor confusion.
bool DropConnection(const httplib::Request& req) {
  const int fd = FindConnectionFd(req);
  if (fd < 0) return false;
  ::shutdown(fd, SHUT_RDWR);
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (null.valid()) ::dup3(null.get(), fd, O_CLOEXEC);
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct MockServer::Impl {
  Options opts;
  std::string token;  // from token_file; empty: no check

  // Subnets.
  Cidr cidr4;
  IpAddress gateway4;
  std::optional<Cidr> cidr6;
  IpAddress gateway6;

  std::unique_ptr<Agent> agent;
  std::unique_ptr<httplib::Server> server;
  std::thread listen_thread;
  std::thread timer_thread;
  int bound_port = 0;
  bool started = false;
  bool stopped = false;

  // Everything below is guarded by mu.
  mutable std::mutex mu;
  std::condition_variable cv;  // wakes the timer thread and interruptible sleeps
  bool stopping = false;
  bool kicked = false;
  Faults faults;
  std::map<std::string, PortRec> ports;
  AddressPool pool4;
  std::optional<AddressPool> pool6;
  MacPool macs{0};
  std::set<std::string> host_names;  // reserved host-end names
  uint64_t next_seq = 1;

  std::mutex admin_mu;  // serialises applying admin_state_up to links
  std::atomic<uint64_t> rest_requests{0};

  // --- wire helpers ---------------------------------------------------------------------------

  bool alcor() const { return opts.dialect == Dialect::kAlcor; }

  std::string StatusName(State s) const {
    switch (s) {
      case State::kPending:
      case State::kActivating:
        return alcor() ? "created" : "PENDING";
      case State::kReady:
        return alcor() ? "ACTIVE" : "UP";
      case State::kFailed:
        return alcor() ? "failed" : "ERROR";
    }
    return "";
  }

  void SetState(PortRec& r, State s) {
    r.state = s;
    r.port.status = StatusName(s);
  }

  static json PortJson(const PortRec& r) {
    json o = r.extra.is_object() ? r.extra : json::object();
    const json base = client::PortToJson(r.port);
    for (auto it = base.begin(); it != base.end(); ++it) o[it.key()] = it.value();
    return o;
  }

  client::Subnet Subnet4() const {
    client::Subnet s;
    s.id = opts.subnet_id;
    s.project_id = opts.project_id;
    s.network_id = opts.vpc_id;
    s.cidr = cidr4.ToString();
    s.gateway_ip = gateway4.ToString();
    s.ip_version = 4;
    return s;
  }

  client::Subnet Subnet6() const {
    client::Subnet s;
    s.id = opts.subnet6_id;
    s.project_id = opts.project_id;
    s.network_id = opts.vpc_id;
    s.cidr = cidr6->ToString();
    s.gateway_ip = gateway6.ToString();
    s.ip_version = 6;
    return s;
  }

  Reply UnknownPort(const std::string& id) const {
    if (alcor()) return ErrorReply(404, "port " + id + " not found");
    return Reply{200, json{{"port", nullptr}}};
  }

  // Sleeps `ms` unless the server stops meanwhile.
  void Sleep(int ms) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait_for(lk, std::chrono::milliseconds(ms), [this] { return stopping; });
  }

  void Kick() {
    {
      std::lock_guard<std::mutex> lk(mu);
      kicked = true;
    }
    cv.notify_all();
  }

  // --- readiness --------------------------------------------------------------------------------

  // Whether a pending port may move on now. Caller holds mu.
  bool Due(const PortRec& r, Clock::time_point now) const {
    return r.state == State::kPending && !r.never_ready && r.gets >= opts.gets_before_ready &&
           now >= r.created + opts.ready_delay;
  }

  // A host-end name for the port: "mz" + 11 hex digits of its id when those are free, else of
  // a hash of it. Caller holds mu.
  std::string ReserveHostName(const std::string& id) {
    std::string hex;
    for (char c : id) {
      if (std::isxdigit(static_cast<unsigned char>(c))) {
        hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    }
    for (int attempt = 0;; ++attempt) {
      std::string name;
      if (attempt == 0 && hex.size() >= 11) {
        name = "mz" + hex.substr(0, 11);
      } else {
        char buf[24];
        std::snprintf(buf, sizeof(buf), "%016llx",
                      static_cast<unsigned long long>(Fnv1a(id + "#" + std::to_string(attempt))));
        name = "mz" + std::string(buf).substr(0, 11);
      }
      if (host_names.insert(name).second) return name;
    }
  }

  // Moves a due port to ready (through the agent) or failed. Several threads may call this for
  // the same port; only one does the work, the others see it pending meanwhile.
  void Activate(const std::string& id) {
    PlugRequest req;
    uint64_t seq = 0;
    {
      std::lock_guard<std::mutex> lk(mu);
      auto it = ports.find(id);
      if (it == ports.end() || stopping) return;
      PortRec& r = it->second;
      if (!Due(r, Clock::now())) return;
      if (r.fail_ready) {
        r.error = "injected fault: fail_ready";
        SetState(r, State::kFailed);
        MZ_LOG(kInfo) << "port " << id << " failed (" << r.error << ")";
        return;
      }
      if (!agent) {
        SetState(r, State::kReady);
        MZ_LOG(kDebug) << "port " << id << " ready";
        return;
      }
      SetState(r, State::kActivating);
      r.host_name = ReserveHostName(id);
      seq = r.seq;
      req.port_id = id;
      req.host_name = r.host_name;
      req.netns_path = r.port.network_ns;
      req.veth_name = r.port.veth_name;
      req.mac = r.port.mac_address;
      req.admin_up = r.port.admin_state_up;
    }

    const Status st = agent->Plug(req);

    bool admin_changed = false;
    {
      std::lock_guard<std::mutex> lk(mu);
      auto it = ports.find(id);
      const bool gone = it == ports.end() || it->second.seq != seq;
      if (!gone) {
        PortRec& r = it->second;
        if (st.ok()) {
          r.plugged = true;
          SetState(r, State::kReady);
          admin_changed = r.port.admin_state_up != req.admin_up;
          MZ_LOG(kDebug) << "port " << id << " ready on " << req.host_name;
        } else {
          r.error = st.message();
          host_names.erase(r.host_name);
          r.host_name.clear();
          SetState(r, State::kFailed);
          MZ_LOG(kWarn) << "port " << id << " failed: " << st.ToString();
        }
        req.host_name.clear();  // still owned by the port
      }
    }
    if (!req.host_name.empty()) {
      // Deleted (or reset) while the agent worked: undo what it made.
      if (st.ok()) {
        Status un = agent->Unplug(req.host_name);
        if (!un.ok()) {
          MZ_LOG(kWarn) << un.ToString();
        }
      }
      std::lock_guard<std::mutex> lk(mu);
      host_names.erase(req.host_name);
      return;
    }
    if (admin_changed) (void)SyncAdmin(id);
  }

  // Applies the port's current admin_state_up to its host end. Returns the netlink error.
  Status SyncAdmin(const std::string& id) {
    std::lock_guard<std::mutex> serial(admin_mu);
    std::string host;
    bool up = true;
    {
      std::lock_guard<std::mutex> lk(mu);
      auto it = ports.find(id);
      if (it == ports.end() || !it->second.plugged) return Status::Ok();
      host = it->second.host_name;
      up = it->second.port.admin_state_up;
    }
    Status st = agent->SetAdmin(host, up);
    if (!st.ok()) {
      MZ_LOG(kWarn) << "port " << id << ": " << st.ToString();
    }
    return st;
  }

  void TimerLoop() {
    std::unique_lock<std::mutex> lk(mu);
    while (!stopping) {
      const auto now = Clock::now();
      auto next = now + std::chrono::seconds(1);
      std::vector<std::string> due;
      for (const auto& [id, r] : ports) {
        if (r.state != State::kPending || r.never_ready || r.gets < opts.gets_before_ready) {
          continue;
        }
        const auto at = r.created + opts.ready_delay;
        if (at <= now) {
          due.push_back(id);
        } else {
          next = std::min(next, at);
        }
      }
      if (!due.empty()) {
        lk.unlock();
        for (const auto& id : due) Activate(id);
        lk.lock();
        continue;
      }
      cv.wait_until(lk, next, [this] { return stopping || kicked; });
      kicked = false;
    }
  }

  // Releases what a port holds in the pools. Caller holds mu.
  void ReleaseAddresses(const PortRec& r) {
    for (const IpAddress& ip : r.ips) {
      if (ip.is_v4()) {
        pool4.Release(ip);
      } else if (pool6) {
        pool6->Release(ip);
      }
    }
    if (!r.port.mac_address.empty()) macs.Release(r.port.mac_address);
  }

  // --- REST handlers ------------------------------------------------------------------------

  bool KnownNetwork(const std::string& id) const {
    return id == opts.subnet_id || id == opts.vpc_id ||
           (!opts.subnet6_id.empty() && id == opts.subnet6_id);
  }

  // Builds one port from a create request item, taking its addresses and MAC. On failure
  // nothing stays allocated. Caller holds mu.
  Result<PortRec> BuildPort(const json& item, const std::string& where,
                            const std::set<std::string>& batch_ids, int* http) {
    *http = 400;
    if (!item.is_object()) {
      return InvalidArgumentError(where + " is not an object (got " + item.type_name() + ")");
    }
    json obj = item;
    auto idv = obj.find("id");
    if (idv == obj.end() || idv->is_null() ||
        (idv->is_string() && idv->get<std::string>().empty())) {
      obj["id"] = UuidV4();
    } else if (!idv->is_string()) {
      return InvalidArgumentError(where + ".id is not a string (got " + idv->type_name() + ")");
    }
    const std::string id = obj["id"].get<std::string>();
    if (ports.count(id) != 0 || batch_ids.count(id) != 0) {
      *http = 409;
      return AlreadyExistsError("port " + id + " already exists");
    }
    auto pv = obj.find("project_id");
    if (pv == obj.end() || pv->is_null() || (pv->is_string() && pv->get<std::string>().empty())) {
      obj["project_id"] = opts.project_id;
    } else if (!pv->is_string() || pv->get<std::string>() != opts.project_id) {
      return InvalidArgumentError(where + ".project_id " + Dump(*pv) +
                                  " does not match the project in the URL (" + opts.project_id +
                                  ")");
    }
    auto nv = obj.find("network_id");
    if (nv == obj.end() || nv->is_null() || (nv->is_string() && nv->get<std::string>().empty())) {
      obj["network_id"] = opts.subnet_id;
    }
    auto vv = obj.find("veth_name");
    if (vv == obj.end() || vv->is_null() || (vv->is_string() && vv->get<std::string>().empty())) {
      obj["veth_name"] = "eth0";
    }
    // What the controller decides is not the caller's to say.
    obj.erase("status");
    obj.erase("mac_address");

    auto parsed = client::PortFromJson(obj);
    if (!parsed.ok()) {
      std::string msg = parsed.status().message();
      if (msg.rfind("port", 0) == 0) msg = where + msg.substr(4);
      return InvalidArgumentError(msg);
    }
    PortRec r;
    r.port = std::move(parsed).value();
    if (!KnownNetwork(r.port.network_id)) {
      *http = 404;
      return NotFoundError(where + ".network_id " + r.port.network_id +
                           " is not a network of this controller (subnet " + opts.subnet_id + ")");
    }
    if (r.port.veth_name.size() > 15 || r.port.veth_name.find('/') != std::string::npos) {
      return InvalidArgumentError(where + ".veth_name \"" + r.port.veth_name +
                                  "\" is not a valid interface name (at most 15 characters, "
                                  "no '/')");
    }
    if (agent && r.port.network_ns.empty()) {
      return InvalidArgumentError(where +
                                  ".network_ns (or veth_namespace) is missing: the "
                                  "agent needs the namespace to place " +
                                  r.port.veth_name + " in");
    }

    // Addresses: requested ones first, then one per configured family still without one.
    std::vector<client::FixedIp> fixed;
    std::vector<IpAddress> taken;
    auto undo = [&] {
      for (const IpAddress& ip : taken) {
        if (ip.is_v4()) {
          pool4.Release(ip);
        } else if (pool6) {
          pool6->Release(ip);
        }
      }
    };
    bool want4 = true, want6 = pool6.has_value();
    // The next free address of one family; on failure everything taken so far goes back.
    auto allocate = [&](bool six) -> Status {
      AddressPool& pool = six ? *pool6 : pool4;
      auto ip = pool.Allocate();
      if (!ip.ok()) {
        undo();
        *http = 503;
        return ip.status();
      }
      taken.push_back(*ip);
      fixed.push_back({six ? opts.subnet6_id : opts.subnet_id, ip->ToString()});
      (six ? want6 : want4) = false;
      return Status::Ok();
    };
    for (size_t k = 0; k < r.port.fixed_ips.size(); ++k) {
      const client::FixedIp& req = r.port.fixed_ips[k];
      const std::string w = where + ".fixed_ips[" + std::to_string(k) + "]";
      bool six = false;
      if (!req.subnet_id.empty()) {
        if (req.subnet_id == opts.subnet_id) {
          six = false;
        } else if (pool6 && req.subnet_id == opts.subnet6_id) {
          six = true;
        } else {
          undo();
          return InvalidArgumentError(w + ".subnet_id " + req.subnet_id +
                                      " is not a subnet of this controller");
        }
      }
      if (req.ip_address.empty()) {
        if (req.subnet_id.empty()) continue;
        MZ_RETURN_IF_ERROR(allocate(six));
        continue;
      }
      auto ip = IpAddress::Parse(req.ip_address);
      if (!ip.ok()) {
        undo();
        return InvalidArgumentError(w + ".ip_address: " + ip.status().message());
      }
      if (req.subnet_id.empty()) six = ip->is_v6();
      if (six && !pool6) {
        undo();
        return InvalidArgumentError(w + ".ip_address " + req.ip_address +
                                    " is IPv6 but this controller has no IPv6 subnet");
      }
      AddressPool& pool = six ? *pool6 : pool4;
      Status st = pool.Reserve(*ip);
      if (!st.ok()) {
        undo();
        *http = st.code() == Code::kAlreadyExists ? 409 : 400;
        return Status(st.code(), w + ": " + st.message());
      }
      taken.push_back(*ip);
      fixed.push_back({six ? opts.subnet6_id : opts.subnet_id, ip->ToString()});
      (six ? want6 : want4) = false;
    }
    for (int fam = 0; fam < 2; ++fam) {
      const bool six = fam == 1;
      if (six ? want6 : want4) MZ_RETURN_IF_ERROR(allocate(six));
    }
    std::stable_sort(fixed.begin(), fixed.end(), [this](const auto& a, const auto& b) {
      return a.subnet_id == opts.subnet_id && b.subnet_id != opts.subnet_id;
    });
    auto mac = macs.Allocate();
    if (!mac.ok()) {
      undo();
      *http = 503;
      return mac.status();
    }
    r.port.mac_address = *mac;
    r.port.fixed_ips = std::move(fixed);
    r.ips = std::move(taken);
    obj.erase("fixed_ips");
    r.extra = std::move(obj);
    *http = 201;
    return r;
  }

  Reply CreatePorts(const json& items, bool bulk) {
    std::vector<PortRec> made;
    std::set<std::string> batch_ids;
    std::lock_guard<std::mutex> lk(mu);
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string where = bulk ? "ports[" + std::to_string(i) + "]" : "port";
      int http = 400;
      auto r = BuildPort(items[i], where, batch_ids, &http);
      if (!r.ok()) {
        for (const PortRec& m : made) ReleaseAddresses(m);
        MZ_LOG(kInfo) << "create refused (HTTP " << http << "): " << r.status().message();
        return ErrorReply(http, r.status().message());
      }
      batch_ids.insert(r->port.id);
      made.push_back(std::move(r).value());
    }
    json out = json::array();
    const auto now = Clock::now();
    for (PortRec& r : made) {
      r.seq = next_seq++;
      r.created = now;
      r.never_ready = faults.never_ready;
      r.fail_ready = faults.fail_ready;
      SetState(r, State::kPending);
      out.push_back(PortJson(r));
      MZ_LOG(kDebug) << "port " << r.port.id << " created: " << r.port.fixed_ips[0].ip_address
                     << " " << r.port.mac_address << " host " << r.port.host_id;
      std::string id = r.port.id;
      ports.emplace(std::move(id), std::move(r));
    }
    kicked = true;
    cv.notify_all();
    if (bulk) return Reply{201, json{{"ports", std::move(out)}}};
    return Reply{201, json{{"port", std::move(out[0])}}};
  }

  Reply HandleCreate(const httplib::Request& req, bool bulk_url) {
    {
      std::lock_guard<std::mutex> lk(mu);
      if (faults.fail_creates > 0) {
        --faults.fail_creates;
        return ErrorReply(500, "injected fault: fail_creates");
      }
      if (faults.reject_creates > 0) {
        --faults.reject_creates;
        return ErrorReply(400, "injected fault: reject_creates: the create request is refused");
      }
    }
    auto doc = ParseBody(req.body);
    if (!doc.ok()) return ErrorReply(400, doc.status().message());
    if (!doc->is_object()) {
      return ErrorReply(400,
                        std::string("request body must be a JSON object, got ") + doc->type_name());
    }
    auto ports_it = doc->find("ports");
    if (bulk_url || ports_it != doc->end()) {
      if (ports_it == doc->end() || !ports_it->is_array()) {
        return ErrorReply(400, "bulk create needs a \"ports\" array");
      }
      if (ports_it->empty()) return ErrorReply(400, "bulk create: \"ports\" is empty");
      return CreatePorts(*ports_it, true);
    }
    auto port_it = doc->find("port");
    if (port_it == doc->end()) {
      return ErrorReply(400, "request body needs a \"port\" object or a \"ports\" array");
    }
    return CreatePorts(json::array({*port_it}), false);
  }

  Reply HandleGet(const std::string& id) {
    {
      std::lock_guard<std::mutex> lk(mu);
      if (faults.fail_gets > 0) {
        --faults.fail_gets;
        return ErrorReply(503, "injected fault: fail_gets");
      }
      if (ports.count(id) == 0) return UnknownPort(id);
    }
    Activate(id);
    std::lock_guard<std::mutex> lk(mu);
    auto it = ports.find(id);
    if (it == ports.end()) return UnknownPort(id);
    PortRec& r = it->second;
    json body = PortJson(r);
    if (++r.gets == opts.gets_before_ready) {
      kicked = true;
      cv.notify_all();
    }
    return Reply{200, json{{"port", std::move(body)}}};
  }

  static bool FieldMatches(const json& v, const std::string& want) {
    if (v.is_string()) return v.get<std::string>() == want;
    if (v.is_boolean()) {
      if (want == "true" || want == "True") return v.get<bool>();
      if (want == "false" || want == "False") return !v.get<bool>();
      return false;
    }
    if (v.is_null()) return want.empty() || want == "null";
    return Dump(v) == want;
  }

  Reply HandleList(const httplib::Request& req) {
    std::vector<std::string> due;
    {
      std::lock_guard<std::mutex> lk(mu);
      const auto now = Clock::now();
      for (const auto& [id, r] : ports) {
        if (Due(r, now)) due.push_back(id);
      }
    }
    for (const auto& id : due) Activate(id);
    std::vector<std::pair<uint64_t, json>> rows;
    {
      std::lock_guard<std::mutex> lk(mu);
      for (const auto& [id, r] : ports) {
        json p = PortJson(r);
        bool match = true;
        for (auto it = req.params.begin(); it != req.params.end() && match;) {
          const std::string& key = it->first;
          auto range = req.params.equal_range(key);
          bool any = false;
          auto f = p.find(key);
          for (auto v = range.first; v != range.second; ++v) {
            if (f != p.end() && FieldMatches(*f, v->second)) any = true;
          }
          match = any;
          it = range.second;
        }
        if (match) rows.emplace_back(r.seq, std::move(p));
      }
    }
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    json out = json::array();
    for (auto& row : rows) out.push_back(std::move(row.second));
    return Reply{200, json{{"ports", std::move(out)}}};
  }

  Reply HandlePut(const std::string& id, const httplib::Request& req) {
    auto doc = ParseBody(req.body);
    if (!doc.ok()) return ErrorReply(400, doc.status().message());
    const json* patch = &*doc;
    if (doc->is_object() && doc->contains("port")) patch = &(*doc)["port"];
    if (!patch->is_object()) {
      return ErrorReply(
          400, std::string("PUT body must be {\"port\":{...}}, got ") + patch->type_name());
    }
    bool admin_changed = false;
    json body;
    {
      std::lock_guard<std::mutex> lk(mu);
      auto it = ports.find(id);
      if (it == ports.end()) return ErrorReply(404, "port " + id + " not found");
      PortRec& r = it->second;
      static const std::set<std::string> kReadOnly = {"status", "mac_address", "fixed_ips",
                                                      "network_id"};
      static const std::set<std::string> kPlacement = {"network_ns", "veth_namespace", "veth_name"};
      json merged = PortJson(r);
      for (const auto& [key, value] : patch->items()) {
        if (key == "id" || key == "project_id") {
          if (value != merged[key]) return ErrorReply(400, "port." + key + " cannot be changed");
          continue;
        }
        if (kReadOnly.count(key) != 0 && value != merged[key]) {
          return ErrorReply(400, "port." + key +
                                     " is decided by the controller and cannot be "
                                     "changed");
        }
        if (kPlacement.count(key) != 0 && value != merged[key] && r.state != State::kPending &&
            agent) {
          return ErrorReply(400, "port." + key +
                                     " cannot be changed once the agent has "
                                     "placed the interface");
        }
        merged[key] = value;
      }
      if (patch->contains("veth_namespace") && !patch->contains("network_ns")) {
        merged["network_ns"] = (*patch)["veth_namespace"];
      }
      auto parsed = client::PortFromJson(merged);
      if (!parsed.ok()) return ErrorReply(400, parsed.status().message());
      client::Port p = std::move(parsed).value();
      admin_changed = p.admin_state_up != r.port.admin_state_up;
      r.port.name = p.name;
      r.port.description = p.description;
      r.port.host_id = p.host_id;
      r.port.admin_state_up = p.admin_state_up;
      r.port.veth_name = p.veth_name;
      r.port.network_ns = p.network_ns;
      for (const auto& [key, value] : patch->items()) {
        if (kReadOnly.count(key) == 0) r.extra[key] = value;
      }
      if (patch->contains("veth_namespace") && !patch->contains("network_ns")) {
        r.extra["network_ns"] = (*patch)["veth_namespace"];
      }
      body = PortJson(r);
      MZ_LOG(kDebug) << "port " << id << " updated: " << Dump(*patch);
    }
    if (admin_changed && agent) {
      Status st = SyncAdmin(id);
      if (!st.ok()) return ErrorReply(500, st.message());
    }
    return Reply{200, json{{"port", std::move(body)}}};
  }

  Reply HandleDelete(const std::string& id) {
    std::string host;
    {
      std::lock_guard<std::mutex> lk(mu);
      if (faults.fail_deletes > 0) {
        --faults.fail_deletes;
        return ErrorReply(500, "injected fault: fail_deletes");
      }
      auto it = ports.find(id);
      if (it == ports.end()) {
        if (alcor()) return ErrorReply(404, "port " + id + " not found");
        return Reply{200, json::object()};
      }
      PortRec& r = it->second;
      ReleaseAddresses(r);
      if (r.plugged) host = r.host_name;  // an activating port is cleaned by its activator
      ports.erase(it);
    }
    MZ_LOG(kDebug) << "port " << id << " deleted";
    if (!host.empty()) {
      Status st = agent->Unplug(host);
      if (!st.ok()) {
        MZ_LOG(kWarn) << "port " << id << ": " << st.ToString();
      }
      std::lock_guard<std::mutex> lk(mu);
      host_names.erase(host);
    }
    return Reply{200, json::object()};
  }

  Reply HandleSubnet(const std::string& id) const {
    if (id == opts.subnet_id) return Reply{200, json{{"subnet", client::SubnetToJson(Subnet4())}}};
    if (cidr6 && id == opts.subnet6_id) {
      return Reply{200, json{{"subnet", client::SubnetToJson(Subnet6())}}};
    }
    return ErrorReply(404, "subnet " + id + " not found");
  }

  Reply HandleSubnets() const {
    json out = json::array({client::SubnetToJson(Subnet4())});
    if (cidr6) out.push_back(client::SubnetToJson(Subnet6()));
    return Reply{200, json{{"subnets", std::move(out)}}};
  }

  // --- plumbing -------------------------------------------------------------------------------

  bool Authorized(const httplib::Request& req) const {
    if (token.empty()) return true;
    return ConstantTimeEquals(req.get_header_value("Authorization"), "Bearer " + token);
  }

  static void Send(httplib::Response& res, const Reply& r) {
    res.status = r.status;
    res.set_content(Dump(r.body), "application/json");
  }

  // Every REST request goes through here: faults, token, project, then the handler.
  void Rest(const httplib::Request& req, httplib::Response& res,
            const std::function<Reply()>& handler) {
    rest_requests.fetch_add(1);
    bool drop = false;
    int delay = 0;
    {
      std::lock_guard<std::mutex> lk(mu);
      if (faults.close_connections > 0) {
        --faults.close_connections;
        drop = true;
      } else {
        delay = faults.delay_ms;
      }
    }
    if (drop) {
      if (DropConnection(req)) {
        MZ_LOG(kDebug) << req.method << " " << req.path << ": connection closed (fault)";
      } else {
        MZ_LOG(kWarn) << req.method << " " << req.path
                      << ": close_connections: the connection's socket was not found";
      }
      Send(res, ErrorReply(500, "injected fault: close_connections"));
      return;
    }
    if (delay > 0) Sleep(delay);
    Reply reply;
    if (!Authorized(req)) {
      reply = ErrorReply(401, "unauthorized");
    } else if (req.matches.size() < 2 || req.matches[1].str() != opts.project_id) {
      reply = ErrorReply(404, "project " +
                                  (req.matches.size() < 2 ? std::string() : req.matches[1].str()) +
                                  " not found");
    } else {
      try {
        reply = handler();
      } catch (const std::exception& e) {
        reply = ErrorReply(500, std::string("internal error: ") + e.what());
      }
    }
    std::string text = Dump(reply.body);
    bool truncate = false;
    {
      std::lock_guard<std::mutex> lk(mu);
      if (faults.truncate_json > 0) {
        --faults.truncate_json;
        truncate = true;
      }
    }
    if (truncate) text = text.substr(0, text.size() / 2);
    res.status = reply.status;
    res.set_content(text, "application/json");
  }

  Reply HandleFaults(const httplib::Request& req) {
    auto doc = ParseBody(req.body);
    if (!doc.ok()) return ErrorReply(400, doc.status().message());
    auto f = FaultsFromJson(*doc);
    if (!f.ok()) return ErrorReply(400, f.status().message());
    {
      std::lock_guard<std::mutex> lk(mu);
      faults = *f;
    }
    MZ_LOG(kInfo) << "faults set: " << Dump(FaultsToJson(*f));
    return Reply{200, json{{"faults", FaultsToJson(*f)}}};
  }

  Reply HandleState() const {
    std::lock_guard<std::mutex> lk(mu);
    json allocated = json::array();
    for (const IpAddress& ip : pool4.allocated()) allocated.push_back(ip.ToString());
    if (pool6) {
      for (const IpAddress& ip : pool6->allocated()) allocated.push_back(ip.ToString());
    }
    return Reply{200, json{{"ports", ports.size()},
                           {"allocated", std::move(allocated)},
                           {"requests", rest_requests.load()},
                           {"faults", FaultsToJson(faults)},
                           {"dialect", alcor() ? "alcor" : "v0.1"}}};
  }

  // Drops every port; tears down the veths that exist. Returns how many ports there were.
  size_t DropAllPorts() {
    std::vector<std::string> hosts;
    size_t n = 0;
    {
      std::lock_guard<std::mutex> lk(mu);
      n = ports.size();
      for (auto& [id, r] : ports) {
        if (r.plugged) hosts.push_back(r.host_name);
      }
      ports.clear();
      pool4.Clear();
      if (pool6) pool6->Clear();
      macs.Clear();
    }
    for (const auto& h : hosts) {
      Status st = agent->Unplug(h);
      if (!st.ok()) {
        MZ_LOG(kWarn) << st.ToString();
      }
      std::lock_guard<std::mutex> lk(mu);
      host_names.erase(h);
    }
    return n;
  }

  Reply HandleReset() {
    const size_t n = DropAllPorts();
    {
      std::lock_guard<std::mutex> lk(mu);
      faults = Faults{};
    }
    MZ_LOG(kInfo) << "reset: dropped " << n << " ports and every fault";
    return Reply{200, json{{"dropped", n}}};
  }

  void Routes(httplib::Server& s) {
    const std::string p = "/project/([^/]+)";
    s.Post(p + "/ports", [this](const httplib::Request& q, httplib::Response& r) {
      Rest(q, r, [&] { return HandleCreate(q, false); });
    });
    s.Post(p + "/ports/bulk", [this](const httplib::Request& q, httplib::Response& r) {
      Rest(q, r, [&] { return HandleCreate(q, true); });
    });
    s.Get(p + "/ports", [this](const httplib::Request& q, httplib::Response& r) {
      Rest(q, r, [&] { return HandleList(q); });
    });
    s.Get(p + "/ports/([^/]+)", [this](const httplib::Request& q, httplib::Response& r) {
      Rest(q, r, [&] { return HandleGet(q.matches[2].str()); });
    });
    s.Put(p + "/ports/([^/]+)", [this](const httplib::Request& q, httplib::Response& r) {
      Rest(q, r, [&] { return HandlePut(q.matches[2].str(), q); });
    });
    s.Delete(p + "/ports/([^/]+)", [this](const httplib::Request& q, httplib::Response& r) {
      Rest(q, r, [&] { return HandleDelete(q.matches[2].str()); });
    });
    s.Get(p + "/subnets", [this](const httplib::Request& q, httplib::Response& r) {
      Rest(q, r, [&] { return HandleSubnets(); });
    });
    s.Get(p + "/subnets/([^/]+)", [this](const httplib::Request& q, httplib::Response& r) {
      Rest(q, r, [&] { return HandleSubnet(q.matches[2].str()); });
    });

    s.Get("/healthz", [](const httplib::Request&, httplib::Response& r) {
      r.status = 200;
      r.set_content("ok", "text/plain");
    });
    s.Get("/mock/state",
          [this](const httplib::Request&, httplib::Response& r) { Send(r, HandleState()); });
    s.Get("/mock/faults", [this](const httplib::Request&, httplib::Response& r) {
      std::lock_guard<std::mutex> lk(mu);
      Send(r, Reply{200, json{{"faults", FaultsToJson(faults)}}});
    });
    s.Post("/mock/faults",
           [this](const httplib::Request& q, httplib::Response& r) { Send(r, HandleFaults(q)); });
    s.Post("/mock/reset",
           [this](const httplib::Request&, httplib::Response& r) { Send(r, HandleReset()); });

    auto no_route = [](const httplib::Request& q, httplib::Response& r) {
      Send(r, ErrorReply(404, "no such endpoint: " + q.method + " " + q.path));
    };
    s.Get(".*", no_route);
    s.Post(".*", no_route);
    s.Put(".*", no_route);
    s.Delete(".*", no_route);
    s.Patch(".*", no_route);

    s.set_logger([this](const httplib::Request& q, const httplib::Response& r) {
      if (opts.verbose) {
        MZ_LOG(kInfo) << q.method << " " << q.path << " -> " << r.status;
      } else {
        MZ_LOG(kDebug) << q.method << " " << q.path << " -> " << r.status;
      }
    });
  }
};

// ---------------------------------------------------------------------------------------------

Result<std::unique_ptr<MockServer>> MockServer::Create(Options options) {
  auto impl = std::make_unique<Impl>();
  Impl& m = *impl;
  m.opts = std::move(options);
  const Options& o = m.opts;
  if (o.project_id.empty()) return InvalidArgumentError("mock: project id is empty");
  if (o.subnet_id.empty()) return InvalidArgumentError("mock: subnet id is empty");
  if (o.port < 0 || o.port > 65535) {
    return InvalidArgumentError("mock: port " + std::to_string(o.port) + " is outside 0..65535");
  }
  if (o.ready_delay.count() < 0) return InvalidArgumentError("mock: ready delay is negative");
  if (o.gets_before_ready < 0) return InvalidArgumentError("mock: gets_before_ready is negative");

  auto cidr = Cidr::ParseNetwork(o.cidr);
  if (!cidr.ok()) return cidr.status().WithContext("mock: cidr");
  if (!cidr->address().is_v4()) {
    return InvalidArgumentError("mock: cidr " + o.cidr + " is not IPv4 (use cidr6 for IPv6)");
  }
  m.cidr4 = *cidr;
  if (o.gateway.empty()) {
    m.gateway4 = m.cidr4.network().Plus(1);
  } else {
    auto gw = IpAddress::Parse(o.gateway);
    if (!gw.ok()) return gw.status().WithContext("mock: gateway");
    m.gateway4 = *gw;
  }
  auto pool4 = AddressPool::Create(m.cidr4, m.gateway4);
  if (!pool4.ok()) return pool4.status().WithContext("mock");
  m.pool4 = std::move(pool4).value();

  if (!o.cidr6.empty()) {
    if (o.subnet6_id.empty()) {
      return InvalidArgumentError("mock: cidr6 " + o.cidr6 + " is set but subnet6_id is empty");
    }
    auto c6 = Cidr::ParseNetwork(o.cidr6);
    if (!c6.ok()) return c6.status().WithContext("mock: cidr6");
    if (!c6->address().is_v6()) {
      return InvalidArgumentError("mock: cidr6 " + o.cidr6 + " is not IPv6");
    }
    m.cidr6 = *c6;
    m.gateway6 = c6->network().Plus(1);
    auto pool6 = AddressPool::Create(*c6, m.gateway6);
    if (!pool6.ok()) return pool6.status().WithContext("mock");
    m.pool6 = std::move(pool6).value();
  } else if (!o.subnet6_id.empty()) {
    return InvalidArgumentError("mock: subnet6_id " + o.subnet6_id + " is set but cidr6 is empty");
  }

  if (!o.token_file.empty()) {
    auto t = ReadFile(o.token_file);
    if (!t.ok()) return t.status().WithContext("mock: token file");
    m.token = Trim(*t);
    if (m.token.empty()) {
      return InvalidArgumentError("mock: token file " + o.token_file + " is empty");
    }
  }
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return InvalidArgumentError("mock: TLS needs both a certificate and a key file");
  }
  if (!o.tls_client_ca_file.empty() && o.tls_cert_file.empty()) {
    return InvalidArgumentError("mock: a TLS client CA needs a server certificate and key");
  }
  for (const std::string* f : {&o.tls_cert_file, &o.tls_key_file, &o.tls_client_ca_file}) {
    if (f->empty()) continue;
    auto data = ReadFile(*f);
    if (!data.ok()) return data.status().WithContext("mock: TLS file");
  }

  if (o.agent) {
    auto agent = Agent::Create(o.agent_netns, o.bridge, o.mtu);
    if (!agent.ok()) return agent.status().WithContext("mock");
    m.agent = std::move(agent).value();
  }
  std::random_device rd;
  m.macs = MacPool(rd());
  m.faults = o.faults;

  std::unique_ptr<MockServer> s(new MockServer());
  s->impl_ = std::move(impl);
  return s;
}

MockServer::~MockServer() {
  if (impl_) Stop();
}

Status MockServer::Start() {
  Impl& m = *impl_;
  if (m.started) return FailedPreconditionError("mock: Start() called twice");
  const Options& o = m.opts;

  if (m.agent) {
    std::optional<Cidr> gw6;
    if (m.cidr6) gw6 = Cidr(m.gateway6, m.cidr6->prefix_len());
    MZ_RETURN_IF_ERROR(m.agent->SetUpBridge(Cidr(m.gateway4, m.cidr4.prefix_len()), gw6));
  }
  auto fail = [&m](Status st) {
    if (m.agent) {
      Status t = m.agent->TearDownBridge();
      if (!t.ok()) {
        MZ_LOG(kWarn) << t.ToString();
      }
    }
    m.server.reset();
    return st;
  };

  if (!o.tls_cert_file.empty()) {
    auto ssl = std::make_unique<httplib::SSLServer>(
        o.tls_cert_file.c_str(), o.tls_key_file.c_str(),
        o.tls_client_ca_file.empty() ? nullptr : o.tls_client_ca_file.c_str());
    if (!ssl->is_valid()) {
      return fail(InvalidArgumentError(
          "mock: TLS setup failed: cannot use certificate " + o.tls_cert_file + " with key " +
          o.tls_key_file +
          (o.tls_client_ca_file.empty() ? "" : " and client CA " + o.tls_client_ca_file)));
    }
    m.server = std::move(ssl);
  } else {
    m.server = std::make_unique<httplib::Server>();
  }
  httplib::Server& s = *m.server;
  s.new_task_queue = [] { return new httplib::ThreadPool(32); };
  s.set_keep_alive_timeout(1);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  // Small JSON replies on kept-alive connections: without TCP_NODELAY each one waits out the
  // client's delayed ACK (~40 ms) behind Nagle. Set on the listening socket, Linux hands it on
  // to every accepted one.
  s.set_tcp_nodelay(true);
  // The packaged library listens with a backlog of 5 (a compile-time constant), which drops SYNs
  // when a burst of plugins connects at once. Keep the listening socket so it can be widened.
  int listen_fd = -1;
  s.set_socket_options([&listen_fd](int fd) {
    httplib::default_socket_options(fd);
    listen_fd = fd;
  });
  m.Routes(s);

  int port = o.port;
  if (port == 0) {
    port = s.bind_to_any_port(o.host);
  } else if (!s.bind_to_port(o.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return fail(UnavailableError("mock: cannot listen on " + o.host + ":" + std::to_string(o.port) +
                                 " (address in use or not local?)"));
  }
  m.bound_port = port;
  // listen() again on a listening socket only resizes its accept queue (capped by somaxconn).
  if (listen_fd >= 0 && ::listen(listen_fd, SOMAXCONN) != 0) {
    MZ_LOG(kWarn) << "mock: cannot widen the listen backlog: " << std::strerror(errno);
  }
  m.listen_thread = std::thread([&s] { s.listen_after_bind(); });
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!s.is_running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!s.is_running()) {
    s.stop();
    if (m.listen_thread.joinable()) m.listen_thread.join();
    return fail(InternalError("mock: the HTTP server did not start within 10 s"));
  }
  m.timer_thread = std::thread([&m] { m.TimerLoop(); });
  m.started = true;
  MZ_LOG(kInfo) << "mizarmp-mock listening on " << base_url() << " ("
                << (m.alcor() ? "alcor" : "v0.1") << " dialect, subnet " << m.cidr4.ToString()
                << (m.agent ? ", agent on bridge " + o.bridge : ", no agent") << ")";
  return Status::Ok();
}

void MockServer::Stop() {
  Impl& m = *impl_;
  if (!m.started || m.stopped) return;
  m.stopped = true;
  {
    std::lock_guard<std::mutex> lk(m.mu);
    m.stopping = true;
  }
  m.cv.notify_all();
  m.server->stop();
  if (m.listen_thread.joinable()) m.listen_thread.join();
  if (m.timer_thread.joinable()) m.timer_thread.join();
  if (m.agent) {
    std::vector<std::string> hosts;
    {
      std::lock_guard<std::mutex> lk(m.mu);
      for (auto& [id, r] : m.ports) {
        if (r.plugged) hosts.push_back(r.host_name);
        r.plugged = false;
        r.host_name.clear();
      }
      m.host_names.clear();
    }
    for (const auto& h : hosts) {
      Status st = m.agent->Unplug(h);
      if (!st.ok()) {
        MZ_LOG(kWarn) << st.ToString();
      }
    }
    Status st = m.agent->TearDownBridge();
    if (!st.ok()) {
      MZ_LOG(kWarn) << st.ToString();
    }
  }
  MZ_LOG(kInfo) << "mizarmp-mock on port " << m.bound_port << " stopped";
}

int MockServer::port() const { return impl_->bound_port; }

std::string MockServer::base_url() const {
  const Options& o = impl_->opts;
  std::string host = o.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::string(o.tls_cert_file.empty() ? "http://" : "https://") + host + ":" +
         std::to_string(impl_->bound_port);
}

void MockServer::SetFaults(const Faults& faults) {
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->faults = faults;
}

std::vector<PortSummary> MockServer::Ports() const {
  std::vector<std::pair<uint64_t, PortSummary>> rows;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    for (const auto& [id, r] : impl_->ports) {
      PortSummary s;
      s.id = id;
      s.host_id = r.port.host_id;
      s.status = r.port.status;
      s.admin_state_up = r.port.admin_state_up;
      for (const auto& ip : r.port.fixed_ips) s.ips.push_back(ip.ip_address);
      s.mac = r.port.mac_address;
      if (r.plugged) s.host_veth = r.host_name;
      rows.emplace_back(r.seq, std::move(s));
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PortSummary> out;
  out.reserve(rows.size());
  for (auto& r : rows) out.push_back(std::move(r.second));
  return out;
}

uint64_t MockServer::requests() const { return impl_->rest_requests.load(); }

}  // namespace mizarmp::mock
