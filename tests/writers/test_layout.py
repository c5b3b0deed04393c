

def test_chinese_text_keeps_its_runs_of_spaces_within_a_line():
    """An aligned row in Chinese (the text report's recurring-failures table) keeps its column
    spacing; only where a line breaks are spaces dropped."""
    from analyzer.writers.layout import wrap

    row = "      2     2      2  LLM_LINK_FAILED (0x5010B009) 来自 LinkLlmClusters -> check-network"
    assert wrap(row, 80, "", " " * 22) == ["      2     2      2  LLM_LINK_FAILED (0x5010B009) 来自 LinkLlmClusters ->",
                                          " " * 22 + "check-network"]
