// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "mizarmp-client/port_list_reader.h"

#include <algorithm>
#include <utility>

namespace mizarmp::client {

bool PortListReader::Scalar(JsonType type, std::string* text, bool boolean) {
  MemberValue* slot = member_ == Member::kSlot ? slot_ : nullptr;
  Begin(type);
  if (slot != nullptr) {
    if (text != nullptr) slot->text = std::move(*text);
    slot->boolean = boolean;
  }
  return true;
}

bool PortListReader::Open(JsonType type, std::size_t elements) {
  PortFields* parent = frames_.empty() ? nullptr : frames_.back().fields;
  const Kind kind = Begin(type);
  // Room for the ports at once: a Port is some 400 bytes, and moving 10,000 of them as the vector
  // grows costs a third as much as reading them. Up to a bound: a hostile list of numbers gets no
  // more than 6.5 MB.
  if (kind == Kind::kEntries && elements != kUnknownSize) {
    doc_.list.ports.reserve(std::min(elements, kMaxReservedPorts));
  }
  PortFields* fields = kind == Kind::kEntry      ? &own_
                       : kind == Kind::kEnvelope ? &envelope_
                       : kind == Kind::kPassed   ? nullptr
                                                 : parent;
  frames_.push_back({kind, fields});
  return true;
}

bool PortListReader::Close() {
  const Kind kind = frames_.back().kind;
  frames_.pop_back();
  if (kind == Kind::kEntry) FinishEntry();
  return true;
}

bool PortListReader::key(string_t& name) {
  member_ = Member::kPassed;
  const Frame& in = frames_.back();
  switch (in.kind) {
    case Kind::kTop:
      if (name == "ports") member_ = Member::kPorts;
      break;
    case Kind::kEntry:
    case Kind::kEnvelope:
      if (name == "fixed_ips") {
        member_ = Member::kFixedIps;
      } else if (in.kind == Kind::kEntry && name == "port") {
        member_ = Member::kEnvelope;
      } else if ((slot_ = in.fields->Find(name)) != nullptr) {
        member_ = Member::kSlot;
      }
      break;
    case Kind::kFixedIp:
      if ((slot_ = in.fields->fixed_ips.back().Find(name)) != nullptr) member_ = Member::kSlot;
      break;
    default:
      break;
  }
  return true;
}

PortListReader::Kind PortListReader::Begin(JsonType type) {
  const Member member = std::exchange(member_, Member::kPassed);
  const bool object = type == JsonType::kObject;
  const bool array = type == JsonType::kArray;
  if (frames_.empty()) {  // the document itself
    doc_.type = type;
    return object ? Kind::kTop : array ? Kind::kEntries : Kind::kPassed;
  }
  Frame& in = frames_.back();
  switch (in.kind) {
    case Kind::kPassed:
      return Kind::kPassed;
    case Kind::kTop:
      if (member != Member::kPorts) return Kind::kPassed;
      doc_.ports_type = type;
      doc_.list = PortList();  // a later "ports" replaces an earlier one
      return array ? Kind::kEntries : Kind::kPassed;
    case Kind::kEntries:
      if (!object) {
        Add(ReadsEnvelope("port", type, false, JsonType::kAbsent).status());
        return Kind::kPassed;
      }
      own_ = PortFields();
      envelope_type_ = JsonType::kAbsent;
      return Kind::kEntry;
    case Kind::kFixedIps:
      in.fields->fixed_ips.emplace_back().type = type;
      return object ? Kind::kFixedIp : Kind::kPassed;
    case Kind::kEntry:
    case Kind::kEnvelope:
    case Kind::kFixedIp:
      break;
  }
  switch (member) {
    case Member::kSlot:
      slot_->type = type;
      return Kind::kPassed;
    case Member::kEnvelope:
      envelope_type_ = type;
      if (!object) return Kind::kPassed;
      envelope_ = PortFields();
      return Kind::kEnvelope;
    case Member::kFixedIps:
      in.fields->fixed_ips_type = type;
      in.fields->fixed_ips.clear();
      return array ? Kind::kFixedIps : Kind::kPassed;
    case Member::kPorts:
    case Member::kPassed:
      break;
  }
  return Kind::kPassed;
}

void PortListReader::FinishEntry() {
  auto in_envelope =
      ReadsEnvelope("port", JsonType::kObject, own_.id.type != JsonType::kAbsent, envelope_type_);
  if (!in_envelope.ok()) return Add(in_envelope.status());
  Add(PortFromFields(*in_envelope ? envelope_ : own_));
}

void PortListReader::Add(Result<Port> port) {
  PortList& list = doc_.list;
  const size_t index = list.ports.size() + list.unreadable.size();
  if (port.ok()) {
    list.ports.push_back(std::move(port).value());
  } else {
    list.unreadable.push_back("ports[" + std::to_string(index) + "]: " + port.status().message());
  }
}

std::optional<PortListDocument> ParsePortListWithNlohmann(std::string_view body) {
  PortListReader reader;
  if (!nlohmann::json::sax_parse(body.begin(), body.end(), &reader)) return std::nullopt;
  return reader.Take();
}

}  // namespace mizarmp::client
