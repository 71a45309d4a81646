from agents.prompt import DataEntry, PromptContext, Turn, assemble, self_data_block


def turns(n: int) -> list[Turn]:
    return [
        Turn(({"role": "user", "content": f"u{i}"}, {"role": "assistant", "content": f"a{i}"}))
        for i in range(n)
    ]


def contents(prompt) -> list[str]:
    return [m["content"] for m in prompt.messages]


def test_history_is_bounded_by_max_turns_and_the_turn_itself_stays():
    ctx = PromptContext(
        player_message="open the gate",
        story_text="The gate opens.",
        history=turns(5),
        summary="Long ago…",
    )
    prompt = assemble(
        body="Save a fact.", runtime={"agent": {"history": {"maxTurns": 2}}}, context=ctx
    )
    assert contents(prompt) == [
        "Save a fact.",
        "u3",
        "a3",
        "u4",
        "a4",
        "open the gate",
        "The gate opens.",
    ]
    none = assemble(body="x", runtime={"agent": {"history": {"maxTurns": 0}}}, context=ctx)
    assert contents(none) == ["x", "open the gate", "The gate opens."]


def test_summaries_come_with_include_summaries_or_the_shared_history():
    ctx = PromptContext(history=turns(1), summary="Earlier: a storm.")
    bounded = assemble(
        body="x",
        runtime={"agent": {"history": {"maxTurns": 1, "includeSummaries": True}}},
        context=ctx,
    )
    shared = assemble(body="x", runtime={}, context=ctx)
    plain = assemble(body="x", runtime={"agent": {"history": {"maxTurns": 1}}}, context=ctx)
    assert (
        "Earlier: a storm." in contents(bounded)[1] and "Earlier: a storm." in contents(shared)[1]
    )
    assert not any("storm" in c for c in contents(plain))


def test_segments_go_to_their_positions():
    segments = [
        {"id": "rules", "content": "Rules.", "position": "system"},
        {"id": "pre", "content": "Before.", "position": "pre-history", "role": "user"},
        {"id": "post", "content": "After.", "position": "post-history"},
        {"id": "deep", "content": "Deep.", "position": {"depth": 1}},
    ]
    ctx = PromptContext(history=turns(2), segments=segments, player_message="go")
    got = contents(assemble(body="Body.", runtime={}, context=ctx))
    assert got[0] == "Body.\n\nRules."
    assert got[1:] == ["Before.", "u0", "a0", "u1", "Deep.", "a1", "After.", "go"]


def test_variables_are_filled_and_missing_ones_reported():
    ctx = PromptContext(variables={"player": {"character": "Mira"}})
    prompt = assemble(
        body="You guide {{ player.character }} and {{ characters.npcs }}.", runtime={}, context=ctx
    )
    assert contents(prompt)[0] == "You guide Mira and ."
    assert prompt.missing_variables == ["characters.npcs"]


def test_runtime_inputs_are_readable_at_their_value():
    runtime = {"io": {"inputs": {"narrative": {"from": {"contract": "narrative-engine@2"}}}}}
    prompt = assemble(
        body="Read it.",
        runtime=runtime,
        context=PromptContext(inputs={"narrative": "The gate opens."}),
    )
    assert '"narrative": {\n    "value": "The gate opens."' in contents(prompt)[0]


def test_self_data_keeps_the_oldest_and_newest_halves_above_max_entries():
    entries = [DataEntry(f"k{i}", {"n": i}, f"2026-01-{i + 1:02d}") for i in range(10)]
    block = self_data_block({"namespace": "notes", "as": "<known-notes>", "maxEntries": 4}, entries)
    lines = block.splitlines()
    assert lines[0] == "<known-notes>" and lines[-1] == "</known-notes>"
    assert [line.split(" ")[0] for line in lines[1:-1]] == ["k0", "k1", "k8", "k9"]


def test_self_data_formats():
    entries = [DataEntry("gate", {"text": "x" * 500}, "2026-01-01")]
    ids = self_data_block({"namespace": "n", "as": "ids", "format": "ids-only"}, entries)
    full = self_data_block({"namespace": "n", "as": "full", "format": "full"}, entries)
    summary = self_data_block({"namespace": "n", "as": "sum"}, entries)
    assert ids == "<ids>\ngate\n</ids>"
    assert len(full) > 500 and "x" * 500 in full
    assert (
        "(updated 2026-01-01)" in summary and summary.endswith("…\n</sum>") and len(summary) < 300
    )
