"""The one data base of pretraining and fine-tuning (roformer_lit.data.resumable): seeded
orders, resumable training loaders, the tokenizer in every checkpoint."""

from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer
from tokenizers.models import WordLevel

from roformer_lit.data.modules import DATA_MODULES
from roformer_lit.data.resumable import ResumableDataModule
from roformer_lit.data.stored_tokenizer import TOKENIZER_KEY
from roformer_lit.finetune.datamodule import TaskDataModule


@pytest.mark.parametrize("cls", [*DATA_MODULES, TaskDataModule], ids=lambda c: c.__name__)
def test_every_data_module_builds_its_loaders_on_the_one_base(cls) -> None:
    assert issubclass(cls, ResumableDataModule)
    assert "seeded_loader" not in vars(cls) and "state_dict" not in vars(cls)


class Toy(ResumableDataModule):
    def __init__(self, seed: int, epoch: int = 0) -> None:
        super().__init__()
        self.seed, self.num_workers, self.epoch = seed, 0, epoch

    def current_epoch(self) -> int:
        return self.epoch

    @property
    def tokenizer(self) -> Tokenizer:
        return Tokenizer(WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))


VALUES = torch.arange(100, 130)


class Items(torch.utils.data.Dataset):
    """Item ``(epoch, i)`` (what the base's sampler yields) is ``VALUES[i]``."""

    def __len__(self) -> int:
        return len(VALUES)

    def __getitem__(self, key: tuple[int, int]) -> torch.Tensor:
        return VALUES[key[1]]


DATA = Items()


def _batches(module: Toy, shuffle: bool) -> list[list[int]]:
    loader = module.seeded_loader(DATA, shuffle=shuffle, batch_size=4)
    return [batch.tolist() for batch in loader]


def test_the_training_order_is_a_permutation_seeded_by_seed_and_epoch() -> None:
    first = _batches(Toy(seed=1), shuffle=True)
    assert sorted(x for batch in first for x in batch) == VALUES.tolist()
    assert first != [VALUES[i : i + 4].tolist() for i in range(0, 30, 4)]  # shuffled
    assert _batches(Toy(seed=1), shuffle=True) == first
    assert _batches(Toy(seed=2), shuffle=True) != first
    assert _batches(Toy(seed=1, epoch=1), shuffle=True) != first


def test_evaluation_is_in_order() -> None:
    assert _batches(Toy(seed=1), shuffle=False) == [
        VALUES[i : i + 4].tolist() for i in range(0, 30, 4)
    ]


def test_a_resumed_training_loader_hands_out_the_rest_of_the_pass() -> None:
    whole = _batches(Toy(seed=5), shuffle=True)
    loader = Toy(seed=5).seeded_loader(DATA, shuffle=True, batch_size=4)
    iterator = iter(loader)
    seen = [next(iterator).tolist() for _ in range(3)]
    resumed = Toy(seed=5).seeded_loader(DATA, shuffle=True, batch_size=4)
    resumed.load_state_dict(loader.state_dict())
    assert seen + [batch.tolist() for batch in resumed] == whole


def test_the_tokenizer_is_the_checkpointed_state() -> None:
    module = Toy(seed=0)
    state = module.state_dict()
    assert Tokenizer.from_str(state[TOKENIZER_KEY]).get_vocab() == module.tokenizer.get_vocab()
