// Prints a protobuf message as indented JSON (every field, defaults included) to stdout.
#pragma once

#include <cstdio>
#include <string>

#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"

namespace arach::client {

inline void PrintJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  std::printf("%s", json.c_str());
}

}  // namespace arach::client
