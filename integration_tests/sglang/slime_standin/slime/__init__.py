"""A stand-in for slime (THUDM/slime at 624b824a898ab0ec1fcb4d373004c7f3852bf515), for profwin-slime's tests.

slime is not on the package registry (it is installed from its repository, with Megatron and a
patched SGLang in a CUDA image), so the tests cannot install it. This package reproduces, at that
commit, exactly the parts profwin-slime meets, with slime's module paths, names and signatures:

- ``slime.rollout.sglang_rollout.generate_rollout(args, rollout_id, data_source, evaluation=False)``
  (slime's default ``--rollout-function-path``): it takes ``rollout_batch_size`` prompt groups of
  ``n_samples_per_prompt`` from the data source, sends every sample concurrently as a ``POST
  /generate`` to slime's router at ``http://{args.sglang_router_ip}:{args.sglang_router_port}``
  with ``max_new_tokens = args.rollout_max_response_len``, and at the end asks the router for its
  ``/workers`` and sends each ``POST /abort_request {"abort_all": true}`` (slime's ``abort``);
  evaluation rollouts (``evaluation=True``) send ``args.n_samples_per_eval_prompt`` samples the same way;
- ``slime.rollout.base_types``: ``RolloutFnTrainOutput``, ``RolloutFnEvalOutput``, ``call_rollout_fn``;
- ``slime.ray.rollout.RolloutManager``: loads ``args.rollout_function_path`` and
  ``args.eval_function_path`` with ``load_function`` and calls them through ``call_rollout_fn``
  from ``generate(rollout_id)`` and ``eval(rollout_id)`` (slime makes it a Ray actor with
  ``ray.remote``; the tests do the same);
- ``slime.utils.misc.load_function`` and ``slime.utils.arguments.apply_custom_config`` (the lines
  of slime's ``slime_validate_args`` that set every key of ``--custom-config-path`` on ``args``,
  and ``eval_function_path`` defaulting to ``rollout_function_path``);
- its installed metadata, ``../slime-0.3.1.dist-info`` (the version slime's ``setup.py`` says at
  that commit; slime's image installs it with ``pip install -e .``), which profwin-slime's version
  rule reads (``PluginSpec.requires``).

Where it differs from slime, and why: requests carry ``text`` and ``ignore_eos`` (slime sends the
tokenizer's ``input_ids`` and stops at EOS; a tiny random model has no meaningful EOS and the
tests count engine steps exactly), they go through ``urllib`` in threads (slime: httpx under
asyncio), and the abort carries the servers' admin key (the test servers require one for
profiling; slime's servers have none). No Megatron, no training, no reward model.
"""
