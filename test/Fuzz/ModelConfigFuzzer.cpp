//===- ModelConfigFuzzer.cpp - fuzz config.json and the site schema -------===//
//
// A Hugging Face config.json from anywhere: the model config, its validation, and the site
// schema (Architecture) the compiler and runtime build from an accepted one.
//
//===----------------------------------------------------------------------===//

#include "nnsc/Schema/Architecture.h"
#include "nnsc/Schema/ModelConfig.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string json(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<nnsc::schema::ModelConfig> config =
      nnsc::schema::ModelConfig::fromHFConfigJson(json, error);
  if (!config || !config->validate(error))
    return 0;
  nnsc::schema::Architecture architecture(*config);
  (void)architecture.dimensionNames();
  (void)config->schemaHash();
  return 0;
}
