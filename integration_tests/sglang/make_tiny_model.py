"""Build a tiny random Llama (and a word-level tokenizer) in a folder; nothing is downloaded.

    python make_tiny_model.py MODEL_DIR

Run with the SGLang environment's python (it needs torch, transformers and tokenizers). The sizes
follow shared/reference/engines-on-cpu.md §7: head_dim 32, 2 layers, vocab 1024.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(model_dir: Path) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers import decoders as tk_decoders
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<unk>", "<s>", "</s>", "<pad>"]
    vocab = {tok: i for i, tok in enumerate(special + [f"w{i}" for i in range(1020)])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = tk_decoders.WordPiece(prefix="##")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>", model_max_length=256
    )
    config = LlamaConfig(
        vocab_size=1024,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    print(f"tiny llama: {sum(p.numel() for p in model.parameters())} parameters in {model_dir}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
