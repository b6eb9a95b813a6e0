"""Running a job: what every run of every command shares, around the network.

The run lifecycle of the LightningModules (:mod:`.lifecycle`), the callbacks (checkpoint
policy, preemption, validation at the end, progress), the one checkpoint reader and writer
(:mod:`.checkpoint_io`), run directories (:mod:`.run_dir`) and the logger
(:mod:`.run_logger`), the tokenizer inside checkpoints, and the process's signals and
console (:mod:`.startup_signals`, :mod:`.quiet`). Modules here import the network
(``roformer_lit.model``) and nothing of the commands or of reading results.
"""
