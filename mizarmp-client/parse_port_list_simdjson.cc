// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// ParsePortList on simdjson (see port_list_reader.h): its DOM parser validates the whole body and
// builds a flat tape at several GB/s; a walk of that tape then gives the reader the events
// nlohmann's SAX parser would. A body simdjson refuses goes to nlohmann's parser, which decides.
#include <simdjson.h>

#include "common/mutex.h"
#include "mizarmp-client/port_list_reader.h"

namespace mizarmp::client {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Sends `value` and everything inside it to the reader, in document order. Recursion is bounded
// by the parser's depth limit (simdjson::DEFAULT_MAX_DEPTH).
void Walk(element value, PortListReader& reader) {
  switch (value.type()) {
    case element_type::OBJECT: {
      const simdjson::dom::object object = value.get_object().value_unsafe();
      reader.start_object(object.size());
      for (const simdjson::dom::key_value_pair member : object) {
        std::string name(member.key);
        reader.key(name);
        Walk(member.value, reader);
      }
      reader.end_object();
      return;
    }
    case element_type::ARRAY: {
      const simdjson::dom::array array = value.get_array().value_unsafe();
      reader.start_array(array.size());
      for (const element item : array) Walk(item, reader);
      reader.end_array();
      return;
    }
    case element_type::STRING: {
      std::string text(value.get_string().value_unsafe());
      reader.string(text);
      return;
    }
    case element_type::INT64:
      reader.number_integer(value.get_int64().value_unsafe());
      return;
    case element_type::UINT64:
      reader.number_unsigned(value.get_uint64().value_unsafe());
      return;
    case element_type::DOUBLE:
      reader.number_float(value.get_double().value_unsafe(), {});
      return;
    case element_type::BOOL:
      reader.boolean(value.get_bool().value_unsafe());
      return;
    case element_type::NULL_VALUE:
      reader.null();
      return;
  }
}

// Where a list is parsed. One parser serves every list up to kKeptParserBytes, its buffers
// (the padded copy of the body, the tape, the strings: some three times the body) kept between
// lists: a parser per list allocated them anew for every fence pass, and glibc's per-thread arenas
// kept what was freed, so a long-running mizarmp-addons' RSS crept up (the fence soak). A larger
// body (up to ClientConfig::max_response_bytes) gets a parser of its own, so no one answer leaves
// its size behind. Lists are read one at a time.
constexpr size_t kKeptParserBytes = size_t{4} << 20;  // a field-selected list of ~20,000 ports

struct KeptParser {
  Mutex mu;
  simdjson::dom::parser parser MZ_GUARDED_BY(mu);
};

KeptParser& Kept() {
  static KeptParser* const kept = new KeptParser;  // never destroyed: no list outlives its reader
  return *kept;
}

std::optional<PortListDocument> Read(simdjson::dom::parser& parser, std::string_view body) {
  element document;
  // parse() copies the body into the parser's buffer, with the padding simdjson reads past the
  // end into.
  if (parser.parse(body.data(), body.size()).get(document) != simdjson::SUCCESS) {
    return ParsePortListWithNlohmann(body);
  }
  PortListReader reader;
  Walk(document, reader);
  return reader.Take();
}

}  // namespace

std::optional<PortListDocument> ParsePortList(std::string_view body) {
  if (body.size() > kKeptParserBytes) {
    simdjson::dom::parser own;
    return Read(own, body);
  }
  KeptParser& kept = Kept();
  MutexLock lock(kept.mu);
  return Read(kept.parser, body);
}

}  // namespace mizarmp::client
