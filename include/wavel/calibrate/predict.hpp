// Predicted throughput of a reference point: WaferLLM's schedule of one layer on P x P, scaled to the depth.
#pragma once

#include "wavel/calibrate/fit.hpp"
#include "wavel/calibrate/reference.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::calibrate {

/// The layer WaferLLM's code timed for the point (calibrate/waferllm_layer.hpp): its shapes, fusions
/// and scalar loops on the point's P x P region, scaled to the model's depth.
meshir::Schedule waferllm_reference_schedule(const ReferencePoint& p, const wafer::WaferParams& wafer);

/// A Predictor for points measured on `wafer`: it builds WaferLLM's single-layer schedule on the
/// point's P x P region (what WaferLLM's code times) once per point and re-scores it for each
/// parameter set. Decode points attend to `context_tokens` with one request; prefill points process
/// `input_tokens`.
Predictor waferllm_predictor(const wafer::WaferParams& wafer);

}  // namespace wavel::calibrate
