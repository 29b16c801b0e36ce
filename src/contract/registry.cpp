#include "contract/registry.hpp"

#include <algorithm>
#include <set>

namespace plumb::contract {

const Form* Registry::find_form(std::string_view name) const {
  for (const auto& form : forms)
    if (form->name() == name) return form.get();
  return nullptr;
}

std::vector<std::string> Registry::covered_ops() const {
  std::set<std::string> ops;
  for (const auto& form : forms) ops.insert(form->op());
  return {ops.begin(), ops.end()};
}

Registry build_registry() {
  Registry registry;
  forms::register_row_forms(registry);
  forms::register_norm_forms(registry);
  forms::register_head_norms_forms(registry);
  forms::register_matmul_forms(registry);
  forms::register_matmul_group_forms(registry);
  forms::register_matmul_geglu_forms(registry);
  forms::register_matmul_head_norms_forms(registry);
  forms::register_attention_forms(registry);
  forms::register_kv_write_forms(registry);
  forms::register_sample_forms(registry);
  controls::register_row_controls(registry);
  controls::register_norm_controls(registry);
  controls::register_matmul_controls(registry);
  controls::register_attention_controls(registry);
  controls::register_sample_controls(registry);
#ifdef PLUMB_HAVE_CUDA
  controls::register_cuda_controls(registry);
#endif
  return registry;
}

std::vector<std::string> backend_launchers(std::string_view backend_header_text) {
  // A typed launcher reads "virtual void NAME(const XxxLaunch& launch) = 0;".
  constexpr std::string_view kHead = "virtual void ";
  std::set<std::string> names;
  for (size_t at = backend_header_text.find(kHead); at != std::string_view::npos;
       at = backend_header_text.find(kHead, at + 1)) {
    const size_t name_begin = at + kHead.size();
    const size_t open = backend_header_text.find('(', name_begin);
    const size_t close = backend_header_text.find(')', name_begin);
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) continue;
    const std::string_view parameters = backend_header_text.substr(open + 1, close - open - 1);
    if (parameters.find("Launch&") == std::string_view::npos) continue;
    names.emplace(backend_header_text.substr(name_begin, open - name_begin));
  }
  return {names.begin(), names.end()};
}

}  // namespace plumb::contract
