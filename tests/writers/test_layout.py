

def test_chinese_text_keeps_its_runs_of_spaces_within_a_line():
    """An aligned row in Chinese (the text report's recurring-failures table) keeps its column
    spacing; only where a line breaks are spaces dropped."""
    from analyzer.writers.layout import wrap

    row = "      2     2      2  LLM_LINK_FAILED (0x5010B009) 来自 LinkLlmClusters -> check-network"
    assert wrap(row, 80, "", " " * 22) == ["      2     2      2  LLM_LINK_FAILED (0x5010B009) 来自 LinkLlmClusters ->",
                                          " " * 22 + "check-network"]


def test_chinese_text_never_ends_a_line_with_an_opening_bracket_nor_starts_one_with_a_closer():
    """A story wrapped at any width: `（` goes to the next line with what it opens (it was left at a
    line's end at many widths), and `，`, `）`, `。` stay on the line they close."""
    from analyzer.writers.layout import wrap

    story = ("因此：检查网络（check-network）。两个节点上共 49 条 LLM-DataDist 发现，其中最多的是来自 "
             "LinkLlmClusters 的 LLM_LINK_FAILED（5 条）。「集群 6」在《日志》中【未恢复】。")
    for width in range(24, 80):  # from the widest unit on: no word is cut
        lines = wrap(story, width)
        assert "".join(lines).replace(" ", "") == story.replace(" ", ""), width
        for line in lines:
            assert line.rstrip()[-1] not in "（「『《【〈", (width, line)
            assert line.lstrip()[0] not in "，。；：、）」』》】〉！？", (width, line)
