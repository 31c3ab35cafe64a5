"""The context-quality benchmark's reply-heavy variant: a server where everyone replies."""

from __future__ import annotations

import json

from bench.context_quality import with_all_replies
from tests.fakes.synthetic import busy_channel


def test_every_annotated_message_replies_to_its_latest_gold_parent(tmp_path):
    export = busy_channel(seed=2, messages=12, reply_rate=0.0, old_reply_rate=0.0)
    ids = [message["id"] for message in export["messages"]]
    export["messages"][5]["reference"] = {"messageId": ids[0]}  # an existing reply stays
    labels = {
        ids[1]: {"annotated": False, "parents": [], "conversation": "c1"},
        ids[3]: {"annotated": True, "parents": [ids[1]], "conversation": "c1"},
        ids[5]: {"annotated": True, "parents": [ids[3]], "conversation": "c1"},
        ids[7]: {"annotated": True, "parents": [ids[1], ids[3]], "conversation": "c1"},
        ids[9]: {"annotated": True, "parents": [ids[9]], "conversation": "c2"},  # itself
    }
    log = tmp_path / "log.json"
    log.write_text(json.dumps(export))
    log.with_suffix(".gold.json").write_text(json.dumps({"messages": labels}))
    source = with_all_replies(log)
    replies = {
        str(m.id): str(m.reference.message_id) for m in source.messages if m.reference is not None
    }
    assert replies == {ids[3]: ids[1], ids[5]: ids[0], ids[7]: ids[3]}
