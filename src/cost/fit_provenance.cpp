// The `fits:` section of params files and the generation-pairing rule.
#include "wavel/cost/fit_provenance.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "wavel/common/error.hpp"
#include "wavel/common/yaml_schema.hpp"
#include "wavel/common/yaml_tree.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::cost {

namespace {

constexpr std::size_t kMaxSteps = 64;

// Double-quoted YAML scalar (the data text is free prose).
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

std::string fits_to_yaml(const std::vector<FitStep>& fits) {
  if (fits.empty()) return {};
  std::string out = "# The measurements each value was fitted on, oldest first (calibrate appends a step)\nfits:\n";
  for (const auto& step : fits) {
    out += "  - wafer: " + step.wafer + "\n    data: " + quoted(step.data) + "\n    names: [";
    for (std::size_t i = 0; i < step.names.size(); ++i) out += (i ? ", " : "") + step.names[i];
    out += "]\n";
  }
  return out;
}

std::vector<FitStep> parse_fits(const std::string& text, const std::string& file_label) {
  const yaml::Node root = yaml::parse_yaml(text, file_label);
  const yaml::Node* section = root.kind == yaml::Node::Kind::map ? root.find("fits") : nullptr;
  std::vector<FitStep> fits;
  if (section == nullptr) return fits;
  yaml::Validator v;
  std::vector<std::string> known;
  for (const auto& info : param_registry()) known.push_back(info.name);
  if (section->kind != yaml::Node::Kind::sequence || section->items.size() > kMaxSteps) {
    v.error(section->where, "fits", "expected a list of at most 64 {wafer, data, names} steps");
  } else {
    for (std::size_t i = 0; i < section->items.size(); ++i) {
      const yaml::Node& item = section->items[i];
      const std::string path = "fits[" + std::to_string(i) + "]";
      if (!v.check_map(item, path, {"wafer", "data", "names"})) continue;
      FitStep step;
      const yaml::Node* wafer = item.find("wafer");
      const yaml::Node* data = item.find("data");
      const yaml::Node* names = item.find("names");
      if (wafer == nullptr || data == nullptr || names == nullptr) {
        v.error(item.where, path, "needs wafer, data and names");
        continue;
      }
      if (auto w = v.choice(*wafer, path + ".wafer", wafer::wafer_preset_names())) step.wafer = *w;
      if (data->kind == yaml::Node::Kind::scalar) step.data = data->scalar;
      if (names->kind != yaml::Node::Kind::sequence) {
        v.error(names->where, path + ".names", "expected a list of parameter names");
        continue;
      }
      for (std::size_t k = 0; k < names->items.size(); ++k) {
        if (auto n = v.choice(names->items[k], path + ".names[" + std::to_string(k) + "]", known)) step.names.push_back(*n);
      }
      fits.push_back(std::move(step));
    }
  }
  v.throw_if_errors();
  return fits;
}

std::vector<FitStep> load_fits(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputMissingError("cannot read params file '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_fits(text.str(), path);
}

std::string generation_pairing_problem(const std::vector<FitStep>& fits) {
  if (fits.empty()) return {};
  std::ptrdiff_t hop = -1;
  for (std::size_t i = 0; i < fits.size(); ++i) {
    const auto& n = fits[i].names;
    if (std::find(n.begin(), n.end(), "alpha_cycles_per_hop") != n.end()) hop = static_cast<std::ptrdiff_t>(i);
  }
  const std::string& generation = hop >= 0 ? fits[static_cast<std::size_t>(hop)].wafer : fits.front().wafer;
  for (std::size_t i = hop >= 0 ? static_cast<std::size_t>(hop) + 1 : 0; i < fits.size(); ++i) {
    if (fits[i].wafer == generation) continue;
    return "step " + std::to_string(i + 1) + " fitted " + fits[i].wafer + " measurements (" + fits[i].data +
           ") with the " + generation + " hop cost " +
           (hop >= 0 ? "of step " + std::to_string(hop + 1) : std::string("of the preset")) +
           "; refit alpha_cycles_per_hop on " + fits[i].wafer + " data after it, or keep the generations in separate files";
  }
  return {};
}

}  // namespace wavel::cost
