// tenzro format: the format-independent half of Checkpoint — the tensor list,
// name index and the MoE view (docs/formats/gguf.md, "MoE tensor names").
//
// Subclasses (GGUF, safetensors) fill the tensor list in their constructor,
// call BuildIndex() once, and answer the metadata queries.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "format/checkpoint.h"

namespace tenzro::format {

class CheckpointBase : public Checkpoint {
 public:
  const std::vector<std::string>& files() const override { return files_; }
  const std::vector<TensorRef>& tensors() const override { return tensors_; }
  const TensorRef* FindTensor(std::string_view name) const override;

  int n_layers() const override { return n_layers_; }
  int n_experts(int layer) const override;
  Result<ExpertSlab> Expert(int layer, int expert, Projection p) const override;
  Result<TensorRef> Router(int layer) const override;
  Result<ExpertSlab> SharedExpert(int layer, Projection p) const override;
  Result<TensorRef> SharedExpertGate(int layer) const override;

 protected:
  // Indexes tensors_ by name and by (layer, suffix). kCorruption on a
  // duplicate tensor name (across shards too).
  Result<void> BuildIndex();

  std::vector<std::string> files_;
  std::vector<TensorRef> tensors_;

 private:
  struct Layer {
    std::map<std::string, size_t, std::less<>> by_suffix;  // "ffn_gate_exps.weight" -> tensor
    int hf_experts = 0;  // max E + 1 over per-expert HF names
  };
  const TensorRef* LayerTensor(int layer, std::string_view suffix) const;
  // First of `suffixes` present in `layer`.
  const TensorRef* FirstOf(int layer, std::initializer_list<std::string_view> suffixes) const;
  Result<ExpertSlab> Slab(const TensorRef& t, int64_t row_len, int64_t rows, uint64_t byte_offset) const;

  std::map<std::string, size_t, std::less<>> by_name_;
  std::map<int, Layer> layers_;
  int n_layers_ = 0;
};

// Splits "blk.3.ffn_up_exps.weight" / "model.layers.3.mlp.gate.weight" /
// "model.language_model.layers.3...." into (3, suffix); false otherwise.
bool SplitLayerName(std::string_view name, int* layer, std::string_view* suffix);

}  // namespace tenzro::format
