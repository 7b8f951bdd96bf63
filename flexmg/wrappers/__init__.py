"""Wrappers and conversions: parallel views, a single-role Gymnasium view, transcript recording."""

from flexmg.wrappers.parallel import LayeredParallelEnv, TurnParallelEnv
from flexmg.wrappers.record import RecordTranscripts, append_jsonl, read_transcripts
from flexmg.wrappers.single_agent import SingleAgentEnv

__all__ = [
    "LayeredParallelEnv",
    "RecordTranscripts",
    "SingleAgentEnv",
    "TurnParallelEnv",
    "append_jsonl",
    "read_transcripts",
]
