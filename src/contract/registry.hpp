#pragma once
// Every launched form and every control the contract runs. Each op file registers its forms (at the real
// Gemma 4 12B and 31B shapes) and each controls file its controls; docs/kernel-contract.md says how to add
// one.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "contract/form.hpp"

namespace plumb::contract {

struct Registry {
  std::vector<std::unique_ptr<Form>> forms;
  std::vector<Control> controls;

  const Form* find_form(std::string_view name) const;
  // The ops (Backend launchers) that at least one form exercises.
  std::vector<std::string> covered_ops() const;
};

Registry build_registry();

// The launchers ops::Backend declares, read from its header so a new op cannot go unregistered.
std::vector<std::string> backend_launchers(std::string_view backend_header_text);

namespace forms {
void register_row_forms(Registry& registry);
void register_norm_forms(Registry& registry);
void register_head_norms_forms(Registry& registry);
void register_matmul_forms(Registry& registry);
void register_matmul_group_forms(Registry& registry);
void register_matmul_geglu_forms(Registry& registry);
void register_matmul_head_norms_forms(Registry& registry);
void register_attention_forms(Registry& registry);
void register_kv_write_forms(Registry& registry);
void register_sample_forms(Registry& registry);
}  // namespace forms

namespace controls {
void register_row_controls(Registry& registry);
void register_norm_controls(Registry& registry);
void register_matmul_controls(Registry& registry);
void register_attention_controls(Registry& registry);
void register_sample_controls(Registry& registry);
void register_cuda_controls(Registry& registry);  // in CUDA builds only
}  // namespace controls

}  // namespace plumb::contract
