// ParsePortList on simdjson (see port_list_reader.h): its DOM parser validates the whole body and
// builds a flat tape at several GB/s; a walk of that tape then gives the reader the events
// nlohmann's SAX parser would. A body simdjson refuses goes to nlohmann's parser, which decides.
#include <simdjson.h>

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

}  // namespace

std::optional<PortListDocument> ParsePortList(std::string_view body) {
  simdjson::dom::parser parser;
  element document;
  // parse() copies the body into a buffer with the padding simdjson reads past the end into.
  if (parser.parse(body.data(), body.size()).get(document) != simdjson::SUCCESS) {
    return ParsePortListWithNlohmann(body);
  }
  PortListReader reader;
  Walk(document, reader);
  return reader.Take();
}

}  // namespace mizarmp::client
