#pragma once
// Post-processors of tokenizer.json for one sequence: TemplateProcessing (special tokens around it),
// ByteLevel (offsets only, so ids pass unchanged) and Sequence.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "text/tokenizer/json_fields.hpp"

namespace plumb::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites the ids of a single sequence encoded with special tokens requested.
  virtual void add_special(std::vector<int32_t>& ids) const = 0;
};

Result<std::unique_ptr<PostProcessor>> parse_post_processor(const Json& node, std::string_view where);

}  // namespace plumb::text
