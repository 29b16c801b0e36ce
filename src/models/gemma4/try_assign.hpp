#pragma once
#include <utility>

#include "core/error.hpp"

// Declares `name` from a Result-returning expression, or returns its error from the enclosing function.
#ifndef PLUMB_TRY_ASSIGN
#define PLUMB_TRY_ASSIGN(name, expr)                                  \
  auto name##_result_ = (expr);                                       \
  if (!name##_result_.ok()) return std::move(name##_result_).error(); \
  auto name = std::move(name##_result_).value()
#endif
