"""Which earlier messages a trigger is about, and whether a message continues the bot's talk.

The build: ``builder`` (its front door: the trigger's links first, then one of two modes, the
history an asker may not read told), ``scored_build`` (the default: a walk back to a silence,
the recent messages and the reply chain propose, the learned score chooses under the cap),
``length`` (how long a channel's conversations run: the cap, ``max_total`` or more where they
run long), ``scoring`` (its candidates and the reasons told from their scores), ``walk``
(how far back it reads: a second history page only when the conversation reaches the first
one's edge), ``rules_build`` (``learned_relevance = false``: the tik/tok walk, reply references
followed one level a step, neighbours by who takes part), ``exploration`` (its state),
``build_steps`` (what both modes do alike: the recent messages, the silence that seals them, a
step through the channel, the selection told), ``references`` (a reply reference followed,
written once for both), ``result`` (what a build returns: the selected messages and why each is
there).

The learned score: ``relevance`` (``RelevanceModel``: which candidates enter and which the trigger
likely answers), ``clues`` (what the score reads of a message, kept once per text by a
``ClueCache``), ``features`` (what it weighs, and the words of an explanation), ``reach`` (how far
a candidate reaches into the conversation by its links), ``stages`` (the fitted logistic and tree
models, evaluated in pure Python), ``weights`` (``relevance_weights.json`` read and checked, and
``relevance_weights_meaning.json``, the score fitted with meaning), ``meaning`` (what a message
means, as a sentence embedding, for that score: the optional ``meaning`` extra).

Links between messages: ``addressing`` (names written at the start of a message read as
addresses), ``message_links`` (a pasted Discord message link joins the context like a reply).
Following: ``follow_model`` (the fitted decision: whether a message that calls no one continues
the bot's conversation, from ``follow_weights.json``), ``follow_meaning`` (how close in meaning
a message is to the bot's conversation, for a decision fitted with the sentence model),
``follower`` (the ``Follower``: that
decision in a live channel, fed from its cache, under the follow settings).
Catching up: ``grouping`` (the conversations of a stretch of channel, each message joined to
the one it continues by a reply or the score, for ``/catchup``).
Starting over: ``seal`` (the bot's ``/fresh`` message: nothing before it is read).

May import ``conversation.common`` and ``conversation.sources``. A change goes here when the
context should hold other messages; the weights files are written by ``lab/`` (see its README).
"""

from conversation.selection.addressing import name_keys, opening_of
from conversation.selection.builder import ContextBuilder
from conversation.selection.clues import Clue, words_of
from conversation.selection.features import (
    ANSWER_SCORE,
    FEATURES,
    MEANING_FEATURES,
    MEANING_SECOND_FEATURES,
    SECOND_FEATURES,
    THIRD_FEATURES,
    feature_rows,
    with_addresses,
)
from conversation.selection.follow_model import (
    DEFAULT_MINUTES,
    FOLLOW_FEATURES,
    FOLLOW_WEIGHTS_FILE,
    MEANING_FOLLOW_FEATURES,
    WINDOW_MESSAGES,
    FollowModel,
    conversation_partners,
    decide,
    explicit,
    follow_row,
    load_follow_model,
    load_follow_model_from,
    relevance_fingerprint,
    written,
)
from conversation.selection.follower import Follower, follow_enabled
from conversation.selection.grouping import (
    Conversation,
    Join,
    group_conversations,
    worth_summarising,
)
from conversation.selection.length import ConversationLengths
from conversation.selection.meaning import MeaningStore, load_embedder, meaning_store, text_of
from conversation.selection.message_links import LinkOutcome, MessageLink
from conversation.selection.relevance import RelevanceModel, Scored, thread_scores
from conversation.selection.result import ContextSelection, Reason
from conversation.selection.scored_build import PARENT_NEIGHBOURS
from conversation.selection.seal import SEAL_COMMAND, SEAL_TEXT, is_seal, sealed
from conversation.selection.stages import LogisticStage, Tree, TreeStage
from conversation.selection.weights import (
    MEANING_WEIGHTS_FILE,
    WEIGHTS_FILE,
    WeightsError,
    load_meaning_model,
    load_model,
    load_model_from,
)

__all__ = [
    "ANSWER_SCORE",
    "DEFAULT_MINUTES",
    "FEATURES",
    "FOLLOW_FEATURES",
    "FOLLOW_WEIGHTS_FILE",
    "MEANING_FEATURES",
    "MEANING_FOLLOW_FEATURES",
    "MEANING_SECOND_FEATURES",
    "MEANING_WEIGHTS_FILE",
    "PARENT_NEIGHBOURS",
    "SEAL_COMMAND",
    "SEAL_TEXT",
    "SECOND_FEATURES",
    "THIRD_FEATURES",
    "WEIGHTS_FILE",
    "WINDOW_MESSAGES",
    "Clue",
    "ContextBuilder",
    "ContextSelection",
    "Conversation",
    "ConversationLengths",
    "FollowModel",
    "Follower",
    "Join",
    "LinkOutcome",
    "LogisticStage",
    "MeaningStore",
    "MessageLink",
    "Reason",
    "RelevanceModel",
    "Scored",
    "Tree",
    "TreeStage",
    "WeightsError",
    "conversation_partners",
    "decide",
    "explicit",
    "feature_rows",
    "follow_enabled",
    "follow_row",
    "group_conversations",
    "is_seal",
    "load_embedder",
    "load_follow_model",
    "load_follow_model_from",
    "load_meaning_model",
    "load_model",
    "load_model_from",
    "meaning_store",
    "name_keys",
    "opening_of",
    "relevance_fingerprint",
    "sealed",
    "text_of",
    "thread_scores",
    "with_addresses",
    "words_of",
    "worth_summarising",
    "written",
]
