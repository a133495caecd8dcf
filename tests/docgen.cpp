// Writes (--write) or checks (--check) the generated blocks of docs/*.md from the tables they
// describe (config keys, MeshIR kernels), so a key or a kernel is declared once, in code:
//   <!-- generated: NAME -->
//   ...
//   <!-- end generated -->
// Exit 0 when every block is current (or was rewritten), 1 when one is stale, 2 on bad usage.
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "wavel/config/keys.hpp"
#include "wavel/meshir/kernels.hpp"

namespace {

using namespace wavel;

std::string kernels_block() {
  std::ostringstream out;
  out << "| kernel | what it does | moves data | keeps weights | attention | routing colours |\n";
  out << "|---|---|---|---|---|---|\n";
  for (const auto& k : meshir::kernel_table()) {
    const char* attention = k.attention == meshir::AttentionFit::products  ? "scores, values"
                            : k.attention == meshir::AttentionFit::softmax ? "softmax"
                                                                           : "";
    out << "| `" << k.name << "` | " << k.what << " | " << (k.moves_between_regions ? "yes" : "") << " | "
        << (k.holds_weights ? "yes" : "") << " | " << attention << " | " << k.route_colours << " |\n";
  }
  return out.str();
}

std::string config_block(const std::string& section) {
  std::ostringstream out;
  out << "| key | unit | default | meaning |\n|---|---|---|---|\n";
  for (const auto& k : config::key_reference(section)) {
    out << "| `" << k.key << "` | " << k.unit << " | " << k.default_text << " | " << k.meaning << " |\n";
  }
  return out.str();
}

const std::map<std::string, std::function<std::string()>>& generators() {
  static const std::map<std::string, std::function<std::string()>> g = [] {
    std::map<std::string, std::function<std::string()>> m{{"meshir.kernels", kernels_block}};
    for (const auto& section : config::table_sections()) {
      m["config." + section] = [section] { return config_block(section); };
    }
    return m;
  }();
  return g;
}

// The text with every generated block replaced; `stale` lists blocks whose text changed.
std::string regenerate(const std::string& text, const std::string& file, std::string& stale, bool& bad) {
  const std::string open = "<!-- generated: ", close = "<!-- end generated -->";
  std::string out;
  std::size_t at = 0;
  while (true) {
    const std::size_t b = text.find(open, at);
    if (b == std::string::npos) break;
    const std::size_t name_end = text.find(" -->", b);
    const std::size_t body = text.find('\n', b);
    const std::size_t e = text.find(close, b);
    if (name_end == std::string::npos || body == std::string::npos || e == std::string::npos) {
      std::cerr << file << ": unterminated generated block\n";
      bad = true;
      return text;
    }
    const std::string name = text.substr(b + open.size(), name_end - b - open.size());
    const auto g = generators().find(name);
    if (g == generators().end()) {
      std::cerr << file << ": no generator named '" << name << "'\n";
      bad = true;
      return text;
    }
    const std::string want = g->second();
    if (text.compare(body + 1, e - body - 1, want) != 0) stale += "  " + file + ": " + name + "\n";
    out += text.substr(at, body + 1 - at) + want;
    at = e;
  }
  return out + text.substr(at);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::string(argv[1]) != "--check" && std::string(argv[1]) != "--write")) {
    std::cerr << "usage: wavel_docgen --check|--write SOURCE_DIR\n";
    return 2;
  }
  const bool write = std::string(argv[1]) == "--write";
  const std::filesystem::path docs = std::filesystem::path(argv[2]) / "docs";
  std::string stale;
  bool bad = false;
  for (const auto& entry : std::filesystem::directory_iterator(docs)) {
    if (entry.path().extension() != ".md") continue;
    std::ifstream in(entry.path());
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    const std::string before = stale;
    const std::string updated = regenerate(text, "docs/" + entry.path().filename().string(), stale, bad);
    if (write && stale != before) std::ofstream(entry.path()) << updated;
  }
  if (bad) return 2;
  if (stale.empty()) return 0;
  std::cerr << (write ? "rewrote:\n" : "stale generated blocks (run wavel_docgen --write SOURCE_DIR):\n") << stale;
  return write ? 0 : 1;
}
