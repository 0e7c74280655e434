"""Write a tiny random Llama and a word-level tokenizer to a folder; nothing is downloaded.

Run with an engine environment's python (vLLM's or SGLang's): ``python make_tiny_model.py <model-dir>``.
head_dim is 32 (128 hidden / 4 heads): vLLM's CPU attention rejects 16.
"""

from __future__ import annotations

import sys
from pathlib import Path

VOCAB = 1024
SPECIAL = ["<unk>", "<s>", "</s>", "<pad>"]


def build(directory: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    config = LlamaConfig(
        vocab_size=VOCAB,
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
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)

    vocab = {token: i for i, token in enumerate(SPECIAL + [f"w{i}" for i in range(VOCAB - len(SPECIAL))])}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=256,
    ).save_pretrained(directory)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    build(target)
    print(target)
