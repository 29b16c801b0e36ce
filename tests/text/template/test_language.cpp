// Every language case of tests/fixtures/templates/language_cases.json, whose expected text is what Python
// jinja2 (in Hugging Face's configuration) renders; cases jinja2 refuses must be refused with the template's
// line.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "text/template/template.hpp"

namespace plumb::text::jinja {
namespace {

nlohmann::ordered_json load_cases() {
  std::ifstream file(std::string(PLUMB_SOURCE_DIR) + "/tests/fixtures/templates/language_cases.json");
  std::ostringstream text;
  text << file.rdbuf();
  return nlohmann::ordered_json::parse(text.str());
}

TEST(TemplateLanguage, EveryCaseMatchesJinja2) {
  const nlohmann::ordered_json cases = load_cases()["cases"];
  ASSERT_GE(cases.size(), 100u);
  int rendered = 0;
  int refused = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const std::string name = c["name"].get<std::string>();
    const std::string source = c["template"].get<std::string>();
    SCOPED_TRACE("case " + std::to_string(i) + " '" + name + "': template " + nlohmann::json(source).dump());
    auto parsed = Template::parse(source, "case.jinja");
    Result<std::string> output = parsed ? parsed->render(c["vars"]) : Result<std::string>(parsed.error());
    if (c.contains("refused")) {
      EXPECT_FALSE(output.ok()) << "expected a refusal like jinja2's (" << c["refused"].get<std::string>()
                                << "), got " << nlohmann::json(output.ok() ? *output : "").dump();
      if (output.ok()) continue;
      EXPECT_NE(output.error().message.find("case.jinja"), std::string::npos) << output.error().message;
      ++refused;
      continue;
    }
    if (!output.ok()) {
      ADD_FAILURE() << "expected " << nlohmann::json(c["expected"]).dump()
                    << ", got error: " << output.error().message;
      continue;
    }
    EXPECT_EQ(*output, c["expected"].get<std::string>())
        << "expected " << nlohmann::json(c["expected"]).dump() << ", got " << nlohmann::json(*output).dump();
    ++rendered;
  }
  EXPECT_GT(rendered, 100);
  EXPECT_GT(refused, 10);
}

}  // namespace
}  // namespace plumb::text::jinja
