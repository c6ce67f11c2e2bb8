// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mock-server/routes.h"

#include <httplib.h>

#include <exception>
#include <utility>

#include "common/fileutil.h"
#include "common/log.h"
#include "mock-server/dump.h"
#include "mock-server/http.h"

namespace mizarmp::mock {

namespace {

using nlohmann::json;

Reply ErrorReply(int status, std::string message) {
  return Reply{status, json{{"error", std::move(message)}}};
}

// The HTTP status of a failed model call (see the codes in model.h).
int HttpStatus(const Status& s) {
  if (s.IsInvalidArgument()) return 400;
  if (s.IsNotFound()) return 404;
  if (s.IsAlreadyExists()) return 409;
  if (s.IsTransient()) return 503;
  return 500;
}

Reply FailureReply(const Status& s) { return ErrorReply(HttpStatus(s), s.message()); }

// The HELP and TYPE lines that open a metric family in Prometheus' text format (0.0.4).
void AppendFamily(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// One sample. Label values are the mock's own (status codes, fault names), never a client's,
// so none needs escaping.
void AppendSample(std::string& out, const char* name, uint64_t value, const std::string& label = "",
                  const std::string& label_value = "") {
  out += name;
  if (!label.empty()) out += "{" + label + "=\"" + label_value + "\"}";
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

// A fault is in force while its count is not used up, its delay is set or its switch is on.
bool FaultActive(const json& value) {
  return value.is_boolean() ? value.get<bool>() : value.get<int64_t>() != 0;
}

// The i-th entry of the malformed_ports fault: a port whose fields have the wrong types.
json MalformedPort(int i) {
  return json{{"id", "malformed-" + std::to_string(i)},
              {"admin_state_up", "yes"},
              {"fixed_ips", json{{"ip_address", "10.0.0.1"}}}};
}

// {"port":<document>}, 200.
Reply PortReply(const std::string& document) {
  std::string text;
  text.reserve(document.size() + 16);
  text += "{\"port\":";
  text += document;
  text += '}';
  return Reply{200, json(), std::move(text)};
}

void Send(httplib::Response& res, const Reply& r) {
  res.status = r.status;
  res.set_content(Dump(r.body), "application/json");
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

// The port fields of a PUT body, {"port":{fields}} or the fields alone; nullptr when `doc` is
// neither (not an object).
const json* PortFields(const json& doc) {
  const json* fields = &doc;
  if (doc.is_object() && doc.contains("port")) fields = &doc["port"];
  return fields->is_object() ? fields : nullptr;
}

}  // namespace

Result<std::unique_ptr<Routes>> Routes::Create(const Options& options, Model& model,
                                               FaultInjector& faults) {
  std::string token;
  if (!options.token_file.empty() && options.strict && options.dialect == Dialect::kV01) {
    return InvalidArgumentError("mock: a strict v0.1 controller has no authentication "
                                "(alcor@5ca01ef0 has no security); no token file");
  }
  if (!options.token_file.empty()) {
    auto t = ReadFile(options.token_file);
    if (!t.ok()) return t.status().WithContext("mock: token file");
    token = Trim(*t);
    if (token.empty()) {
      return InvalidArgumentError("mock: token file " + options.token_file + " is empty");
    }
  }
  return std::unique_ptr<Routes>(new Routes(options, std::move(token), model, faults));
}

Routes::Routes(const Options& options, std::string token, Model& model, FaultInjector& faults)
    : options_(options),
      token_(std::move(token)),
      model_(model),
      faults_(faults),
      journal_(options.journal_capacity),
      strict_(options, model) {}

void Routes::Install(httplib::Server& s) {
  using httplib::Request;
  using httplib::Response;
  if (options_.strict) {
    InstallStrict(s);
  } else {
    InstallSeed(s);
  }

  s.Get("/healthz", [](const Request&, Response& r) {
    r.status = 200;
    r.set_content("ok", "text/plain");
  });
  s.Get("/metrics", [this](const Request&, Response& r) {
    r.status = 200;
    r.set_content(Metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/mock/state", [this](const Request&, Response& r) { Send(r, State()); });
  s.Get("/mock/faults", [this](const Request&, Response& r) {
    Send(r, Reply{200, json{{"faults", FaultsToJson(faults_.Get())}}});
  });
  s.Post("/mock/faults", [this](const Request& q, Response& r) { Send(r, SetFaults(q)); });
  s.Get("/mock/requests", [this](const Request&, Response& r) {
    Send(r, Reply{200, journal_.ToJson()});
  });
  s.Post("/mock/reset", [this](const Request&, Response& r) { Send(r, Reset()); });

  auto no_route = [](const Request& q, Response& r) {
    Send(r, ErrorReply(404, "no such endpoint: " + q.method + " " + q.path));
  };
  s.Get(".*", no_route);
  s.Post(".*", no_route);
  s.Put(".*", no_route);
  s.Delete(".*", no_route);
  s.Patch(".*", no_route);

  s.set_logger([this](const Request& q, const Response& r) {
    if (options_.verbose) {
      MZ_LOG(kInfo) << q.method << " " << q.path << " -> " << r.status;
    } else {
      MZ_LOG(kDebug) << q.method << " " << q.path << " -> " << r.status;
    }
  });
}

// The seed README's REST surface, in either dialect (mock.h).
void Routes::InstallSeed(httplib::Server& s) {
  using httplib::Request;
  using httplib::Response;
  const std::string p = "/project/([^/]+)";
  s.Post(p + "/ports", [this](const Request& q, Response& r) {
    Serve(q, r, [&] { return CreatePorts(q, false); });
  });
  s.Post(p + "/ports/bulk", [this](const Request& q, Response& r) {
    Serve(q, r, [&] { return CreatePorts(q, true); });
  });
  s.Get(p + "/ports",
        [this](const Request& q, Response& r) { Serve(q, r, [&] { return ListPorts(q); }); });
  s.Get(p + "/ports/([^/]+)", [this](const Request& q, Response& r) {
    Serve(q, r, [&] { return GetPort(q.matches[2].str()); });
  });
  s.Put(p + "/ports/([^/]+)", [this](const Request& q, Response& r) {
    const std::string id = q.matches[2].str();
    Journal(id, q, Serve(q, r, [&] { return UpdatePort(id, q); }));
  });
  s.Delete(p + "/ports/([^/]+)", [this](const Request& q, Response& r) {
    Serve(q, r, [&] { return DeletePort(q.matches[2].str()); });
  });
  s.Get(p + "/subnets",
        [this](const Request& q, Response& r) { Serve(q, r, [&] { return ListSubnets(); }); });
  s.Get(p + "/subnets/([^/]+)", [this](const Request& q, Response& r) {
    Serve(q, r, [&] { return GetSubnet(q.matches[2].str()); });
  });
}

// The real controllers' REST surface (strict.h). Both generations also answer under "v4/"
// (PortController's second mapping); no client uses it, so the mock leaves it out.
void Routes::InstallStrict(httplib::Server& s) {
  using httplib::Request;
  using httplib::Response;
  const std::string p = "/project/([^/]+)";
  const auto project = [](const Request& q) { return q.matches[1].str(); };
  const auto body = [](const Request& q) { return json::parse(q.body, nullptr, false); };
  const auto query = [](const Request& q) {
    return std::multimap<std::string, std::string>(q.params.begin(), q.params.end());
  };
  s.Post(p + "/ports", [=, this](const Request& q, Response& r) {
    Serve(q, r, [&] {
      return Strict(strict_.Create(project(q), body(q), false, faults_.Get(), q.path));
    });
  });
  if (alcor()) {
    s.Post(p + "/ports/bulk", [=, this](const Request& q, Response& r) {
      Serve(q, r, [&] {
        return Strict(strict_.Create(project(q), body(q), true, faults_.Get(), q.path));
      });
    });
    s.Get(p + "/ports", [=, this](const Request& q, Response& r) {
      Serve(q, r, [&] { return Strict(strict_.List(query(q), q.path)); });
    });
    s.Get("/nodes", [this](const Request& q, Response& r) {
      Serve(q, r, [&] { return Strict(strict_.Nodes()); });
    });
  } else {
    s.Post(p + "/portgroup", [this](const Request& q, Response& r) {
      Serve(q, r, [&] { return Strict(strict_.CreateGroup(q.path)); });
    });
    s.Get(p + "/subnet/([^/]+)/ports", [=, this](const Request& q, Response& r) {
      Serve(q, r, [&] { return Strict(strict_.ListOfSubnet(project(q), q.matches[2].str())); });
    });
    // PortController maps /ports for POST only: Spring answers another method 405.
    s.Get(p + "/ports", [this](const Request& q, Response& r) {
      Serve(q, r, [&] {
        return Strict(SpringError(405, "Request method 'GET' not supported", q.path));
      });
    });
  }
  s.Get(p + "/ports/([^/]+)", [=, this](const Request& q, Response& r) {
    Serve(q, r, [&] { return Strict(strict_.Get(q.matches[2].str(), query(q), q.path)); });
  });
  s.Put(p + "/ports/([^/]+)", [=, this](const Request& q, Response& r) {
    const std::string id = q.matches[2].str();
    Journal(id, q, Serve(q, r, [&] {
              return Strict(strict_.Update(project(q), id, body(q), q.path));
            }));
  });
  s.Delete(p + "/ports/([^/]+)", [=, this](const Request& q, Response& r) {
    Serve(q, r, [&] { return Strict(strict_.Delete(project(q), q.matches[2].str(), q.path)); });
  });
  s.Get(p + "/subnets/([^/]+)", [this](const Request& q, Response& r) {
    Serve(q, r, [&] { return Strict(strict_.GetSubnet(q.matches[2].str())); });
  });
}

Reply Routes::Strict(const StrictReply& reply) const {
  if (reply.empty_body) return Reply{reply.status, json(), std::string()};
  return Reply{reply.status, reply.body};
}

void Routes::Stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

// --- the REST pipeline ------------------------------------------------------------------------

int Routes::Serve(const httplib::Request& req, httplib::Response& res,
                  const std::function<Reply()>& handler) {
  requests_.fetch_add(1);
  const FaultInjector::ConnectionFault connection = faults_.OnRequest();
  if (connection.drop) {
    if (DropConnection(req)) {
      MZ_LOG(kDebug) << req.method << " " << req.path << ": connection closed (fault)";
    } else {
      MZ_LOG(kWarn) << req.method << " " << req.path
                    << ": close_connections: the connection's socket was not found";
    }
    Send(res, ErrorReply(500, "injected fault: close_connections"));
    return 0;
  }
  if (connection.delay_ms > 0) Sleep(connection.delay_ms);
  Reply reply;
  const std::string project = req.matches.size() < 2 ? std::string() : req.matches[1].str();
  if (!Authorized(req)) {
    // Alcor's gateway answers 401 without a body (KeystoneAuthGwFilter).
    reply = options_.strict ? Reply{401, json(), std::string()} : ErrorReply(401, "unauthorized");
  } else if (!options_.strict && project != options_.project_id) {
    reply = ErrorReply(404, "project " + project + " not found");
  } else {
    try {
      reply = handler();
    } catch (const std::exception& e) {
      reply = ErrorReply(500, std::string("internal error: ") + e.what());
    }
  }
  if (reply.status == 201 && faults_.Take(&Faults::lose_create_answers)) {
    DropConnection(req);
    MZ_LOG(kDebug) << req.method << " " << req.path << ": created, answer lost (fault)";
    return 0;
  }
  if (reply.status == 204) {  // No Content: no body at all
    res.status = 204;
    return 204;
  }
  std::string text = reply.text ? std::move(*reply.text) : Dump(reply.body);
  if (faults_.Take(&Faults::truncate_json)) text = text.substr(0, text.size() / 2);
  response_bytes_.fetch_add(text.size());
  res.status = reply.status;
  res.body = std::move(text);  // set_content would copy it
  res.set_header("Content-Type", "application/json");
  return reply.status;
}

void Routes::Journal(const std::string& id, const httplib::Request& req, int status) {
  PortUpdate update;
  update.port = id;
  update.user_agent = req.get_header_value("User-Agent");
  update.status = status;
  // Whatever the body asked for, also when it was refused: status says whether it took effect.
  const json doc = json::parse(req.body, nullptr, false);
  const json* fields = PortFields(doc);
  if (fields != nullptr) {
    auto admin = fields->find("admin_state_up");
    if (admin != fields->end() && admin->is_boolean()) update.admin_state_up = admin->get<bool>();
  }
  journal_.Record(std::move(update));
  MutexLock lk(updates_mu_);
  ++updates_by_status_[status];
}

bool Routes::Authorized(const httplib::Request& req) const {
  if (token_.empty()) return true;
  if (options_.strict) return ConstantTimeEqual(req.get_header_value("X-Auth-Token"), token_);
  return ConstantTimeEqual(req.get_header_value("Authorization"), "Bearer " + token_);
}

// Sleeps `ms` unless the routes stop meanwhile.
void Routes::Sleep(int ms) {
  MutexLock lk(mu_);
  lk.WaitFor(cv_, std::chrono::milliseconds(ms), [this]() MZ_REQUIRES(mu_) { return stopping_; });
}

// --- REST handlers ----------------------------------------------------------------------------

// POST ports takes {"port":{...}} or {"ports":[...]}; POST ports/bulk only the latter.
Reply Routes::CreatePorts(const httplib::Request& req, bool bulk_url) {
  if (faults_.Take(&Faults::fail_creates)) return ErrorReply(500, "injected fault: fail_creates");
  if (faults_.Take(&Faults::reject_creates)) {
    return ErrorReply(400, "injected fault: reject_creates: the create request is refused");
  }
  auto doc = ParseBody(req.body);
  if (!doc.ok()) return ErrorReply(400, doc.status().message());
  if (!doc->is_object()) {
    return ErrorReply(400,
                      std::string("request body must be a JSON object, got ") + doc->type_name());
  }
  auto ports = doc->find("ports");
  if (bulk_url || ports != doc->end()) {
    if (ports == doc->end() || !ports->is_array()) {
      return ErrorReply(400, "bulk create needs a \"ports\" array");
    }
    if (ports->empty()) return ErrorReply(400, "bulk create: \"ports\" is empty");
    return Created(*ports, true);
  }
  auto port = doc->find("port");
  if (port == doc->end()) {
    return ErrorReply(400, "request body needs a \"port\" object or a \"ports\" array");
  }
  return Created(json::array({*port}), false);
}

Reply Routes::Created(const json& items, bool bulk) {
  auto made = model_.CreatePorts(items, bulk, faults_.Get());
  if (!made.ok()) return FailureReply(made.status());
  if (bulk) return Reply{201, json{{"ports", std::move(made).value()}}};
  return Reply{201, json{{"port", std::move(made->front())}}};
}

Reply Routes::GetPort(const std::string& id) {
  if (faults_.Take(&Faults::fail_gets)) return ErrorReply(503, "injected fault: fail_gets");
  auto port = model_.GetPort(id);
  if (port.status().IsNotFound()) return UnknownPort(id);
  if (!port.ok()) return FailureReply(port.status());
  return PortReply(**port);
}

// An unknown port reads as {"port":null} in v0.1 and as 404 in Alcor.
Reply Routes::UnknownPort(const std::string& id) const {
  if (alcor()) return ErrorReply(404, "port " + id + " not found");
  return Reply{200, json{{"port", nullptr}}};
}

// {"ports":[...]}, the ports' documents copied once into a body of the right size. Every query
// parameter filters but `fields`, which names the members to answer with (given once per member,
// as Neutron and Alcor take it). The malformed_ports fault appends its entries after the real
// ports.
Reply Routes::ListPorts(const httplib::Request& req) {
  const Faults faults = faults_.Get();
  std::multimap<std::string, std::string> filters;
  std::vector<std::string> fields;
  for (const auto& [key, value] : req.params) {
    if (key != "fields") {
      filters.emplace(key, value);
    } else if (!faults.ignore_fields) {
      fields.push_back(value);
    }
  }
  std::vector<PortText> entries = model_.ListPorts(filters, fields);
  for (int i = 1; i <= faults.malformed_ports; ++i) {
    entries.push_back(std::make_shared<const std::string>(Dump(MalformedPort(i))));
  }
  size_t size = 0;
  for (const auto& e : entries) size += e->size() + 1;
  std::string text;
  text.reserve(size + 16);
  text += "{\"ports\":[";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) text += ',';
    text += *entries[i];
  }
  text += "]}";
  return Reply{200, json(), std::move(text)};
}

// PUT ports/{id} takes {"port":{fields}} (or the fields alone); the updated port, or 204 without
// a body under the update_no_content fault.
Reply Routes::UpdatePort(const std::string& id, const httplib::Request& req) {
  if (faults_.Take(&Faults::reject_updates)) {
    return ErrorReply(400, "injected fault: reject_updates: the update request is refused");
  }
  auto doc = ParseBody(req.body);
  if (!doc.ok()) return ErrorReply(400, doc.status().message());
  const json* patch = PortFields(*doc);
  if (patch == nullptr) {
    const json& given = doc->is_object() ? doc->at("port") : *doc;
    return ErrorReply(400,
                      std::string("PUT body must be {\"port\":{...}}, got ") + given.type_name());
  }
  auto port = model_.UpdatePort(id, *patch);
  if (!port.ok()) return FailureReply(port.status());
  if (faults_.Get().update_no_content) return Reply{204, json()};
  return PortReply(**port);
}

// Deleting an unknown port succeeds in v0.1 and is 404 in Alcor.
Reply Routes::DeletePort(const std::string& id) {
  if (faults_.Take(&Faults::fail_deletes)) return ErrorReply(500, "injected fault: fail_deletes");
  Status st = model_.DeletePort(id);
  if (st.IsNotFound() && !alcor()) return Reply{200, json::object()};
  if (!st.ok()) return FailureReply(st);
  return Reply{200, json::object()};
}

Reply Routes::GetSubnet(const std::string& id) const {
  auto subnet = model_.Subnet(id);
  if (!subnet.ok()) return FailureReply(subnet.status());
  return Reply{200, json{{"subnet", client::SubnetToJson(*subnet)}}};
}

Reply Routes::ListSubnets() const {
  json out = json::array();
  for (const client::Subnet& s : model_.Subnets()) out.push_back(client::SubnetToJson(s));
  return Reply{200, json{{"subnets", std::move(out)}}};
}

// --- control handlers -------------------------------------------------------------------------

Reply Routes::State() const {
  Model::Usage usage = model_.usage();
  json state{{"ports", usage.ports},
             {"allocated", std::move(usage.allocated)},
             {"agent_backlog", usage.agent_backlog},
             {"requests", requests_.load()},
             {"response_bytes", response_bytes_.load()},
             {"faults", FaultsToJson(faults_.Get())},
             {"dialect", DialectName(options_.dialect)},
             {"strict", options_.strict},
             {"leaked_addresses", strict_.leaked_addresses()}};
  if (!options_.agent_ovsdb.empty()) {
    state["agent_waiting"] = usage.agent_waiting;
    state["vlans"] = usage.vlans;
  }
  return Reply{200, std::move(state)};
}

Reply Routes::SetFaults(const httplib::Request& req) {
  auto doc = ParseBody(req.body);
  if (!doc.ok()) return ErrorReply(400, doc.status().message());
  auto f = FaultsFromJson(*doc);
  if (!f.ok()) return ErrorReply(400, f.status().message());
  faults_.Set(*f);
  MZ_LOG(kInfo) << "faults set: " << Dump(FaultsToJson(*f));
  return Reply{200, json{{"faults", FaultsToJson(*f)}}};
}

Reply Routes::Reset() {
  strict_.Clear();
  const size_t n = model_.DeleteAllPorts();
  faults_.Set(Faults{});
  journal_.Clear();
  MZ_LOG(kInfo) << "reset: dropped " << n << " ports, every fault and the request journal";
  return Reply{200, json{{"dropped", n}}};
}

std::string Routes::Metrics() const {
  std::map<int, uint64_t> updates;
  {
    MutexLock lk(updates_mu_);
    updates = updates_by_status_;
  }
  std::string out;
  AppendFamily(out, "mizarmp_mock_requests_total", "counter",
               "REST requests received, control endpoints excluded");
  AppendSample(out, "mizarmp_mock_requests_total", requests_.load());
  AppendFamily(out, "mizarmp_mock_response_bytes_total", "counter",
               "Bytes of the bodies of the REST answers");
  AppendSample(out, "mizarmp_mock_response_bytes_total", response_bytes_.load());
  AppendFamily(out, "mizarmp_mock_ports", "gauge", "Ports the mock holds");
  AppendSample(out, "mizarmp_mock_ports", model_.port_count());
  AppendFamily(out, "mizarmp_mock_port_updates_total", "counter",
               "Port updates (PUT of a port) by the HTTP status answered, or closed when the "
               "close_connections fault closed the connection without an answer");
  for (const auto& [status, count] : updates) {
    AppendSample(out, "mizarmp_mock_port_updates_total", count, "code",
                 status == 0 ? "closed" : std::to_string(status));
  }
  AppendFamily(out, "mizarmp_mock_fault_active", "gauge",
               "1 while the fault of POST /mock/faults is in force: a count not used up, a "
               "delay or a switch set");
  const json faults = FaultsToJson(faults_.Get());
  for (const auto& [fault, value] : faults.items()) {
    AppendSample(out, "mizarmp_mock_fault_active", FaultActive(value) ? 1 : 0, "fault", fault);
  }
  return out;
}

}  // namespace mizarmp::mock
