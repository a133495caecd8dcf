// Printer of the MeshIR text form (see text.hpp); parse(print(s)) == s is tested.
#include <cstdio>
#include <charconv>
#include <sstream>
#include <string>

#include "wavel/meshir/text.hpp"

namespace wavel::meshir {

namespace {

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      // Any other control byte would break the one-item-per-line layout, so it is spelled in hex.
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned>(byte));
      out += hex;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string pair_text(std::int64_t a, std::int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }

std::string layout_text(const Layout& l) {
  std::string out;
  out += "x:" + std::string(to_string(l.on_x));
  out += ",y:" + std::string(to_string(l.on_y));
  out += ",part:" + pair_text(l.part_x, l.part_y);
  out += ",repl:" + pair_text(l.repl_x, l.repl_y);
  out += ",tile:" + pair_text(l.tile_rows, l.tile_cols);
  return out;
}

std::string work_text(const OpWork& w) {
  std::ostringstream out;
  out << "batch:" << w.batch << ",m:" << w.m << ",k:" << w.k << ",n:" << w.n << ",flops:" << w.flops
      << ",weight_bytes:" << w.weight_bytes << ",input_bytes:" << w.input_bytes << ",output_bytes:" << w.output_bytes
      << ",kv_cache_bytes:" << w.kv_cache_bytes << ",heads:" << w.heads << ",kv_heads:" << w.kv_heads;
  // Written when set, so that schedules without them read back as before.
  if (w.fused != 1) out << ",fused:" << w.fused;
  if (w.products != 1) out << ",products:" << w.products;
  if (!w.product_rows.empty()) {  // one count per product, '/' apart
    out << ",product_rows:";
    for (std::size_t i = 0; i < w.product_rows.size(); ++i) out << (i > 0 ? "/" : "") << w.product_rows[i];
  }
  if (w.scalar_elements != 0 || w.scalar_instructions != 0 || w.scalar_divisions != 0) {
    out << ",scalar_elements:" << w.scalar_elements << ",scalar_instructions:" << w.scalar_instructions
        << ",scalar_divisions:" << w.scalar_divisions;
  }
  for (const auto& f : wafer::vector_forms()) {
    if (const auto count = w.vector[static_cast<std::size_t>(f.form)]; count != 0) out << ",vec_" << f.name << ':' << count;
  }
  return out.str();
}

std::string inputs_text(const std::vector<int>& inputs) {
  if (inputs.empty()) return "-";
  std::string out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(inputs[i]);
  }
  return out;
}

}  // namespace

std::string print(const Schedule& s) {
  std::ostringstream out;
  out << "meshir " << text_format_version << '\n';
  out << "schedule " << quote(s.name) << '\n';
  out << "grid " << s.grid_w_pes << ' ' << s.grid_h_pes << '\n';
  out << "sram_per_pe_bytes " << s.sram_per_pe_bytes << '\n';
  if (s.sram_reserved_per_pe_bytes != 0) out << "sram_reserved_per_pe_bytes " << s.sram_reserved_per_pe_bytes << '\n';
  out << "colours " << s.colours << '\n';
  out << "requests " << s.concurrent_requests << '\n';
  out << "microbatches " << s.microbatches << '\n';
  if (s.prompt_chunks != 1) out << "prompt_chunks " << s.prompt_chunks << '\n';
  out << "layers " << s.layers_total << " scale " << s.layer_scale << '\n';
  if (s.wafers > 1) {
    out << "wafers " << s.wafers << " link_bytes_per_s " << s.link_bytes_per_s << " link_latency_ns "
        << s.link_latency_ns << " io_edge " << to_string(s.io_edge) << '\n';
  }
  for (const auto& [x, y] : s.defective_pes) out << "defect " << x << ' ' << y << '\n';
  if (!s.regions.empty()) out << (s.wafers > 1 ? "# region INDEX X Y W H wafer N\n" : "# region INDEX X Y W H\n");
  for (std::size_t i = 0; i < s.regions.size(); ++i) {
    const Rect& r = s.regions[i];
    out << "region " << i << ' ' << r.x << ' ' << r.y << ' ' << r.w << ' ' << r.h;
    if (s.wafers > 1) out << " wafer " << wafer_of(s, static_cast<int>(i));
    out << '\n';
  }
  if (!s.ops.empty()) out << "# op INDEX \"NAME\" FIELD=VALUE ...\n";
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const PlacedOp& op = s.ops[i];
    out << "op " << i << ' ' << quote(op.name) << " kernel=" << to_string(op.kernel) << " region=" << op.region
        << " used=" << op.used.x << ',' << op.used.y << ',' << op.used.w << ',' << op.used.h << " step=" << op.step
        << " stage=" << op.stage << " inputs=" << inputs_text(op.inputs) << " in=" << layout_text(op.in_layout)
        << " out=" << layout_text(op.out_layout) << " reduce=" << to_string(op.reduce_axis)
        << " group=" << op.group << " rounds=" << op.rounds << " to_region=" << op.to_region
        << " repeat=" << (op.once ? "once" : "layers") << " attn=" << to_string(op.attention)
        << (op.input_skewed ? " skewed=yes" : "") << " work=" << work_text(op.work) << '\n';
  }
  out << costed_text(s);
  return out.str();
}

std::string costed_text(const Schedule& s) {
  std::string out;
  if (!s.costed_on.empty() || !s.costed_params.empty()) {
    out += "# what the run costed this schedule with; check and simulate use it unless --wafer/--params say otherwise\n";
  }
  if (!s.costed_on.empty()) out += "costed_on " + s.costed_on + "\n";
  for (const auto& p : s.costed_params) {
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits, p.value).ptr;  // shortest round-trip form
    out += "param " + p.name + " " + std::string(digits, end) + "\n";
  }
  return out;
}

}  // namespace wavel::meshir
