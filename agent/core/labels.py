"""Every fixed word of the briefing, in one place, so another language is one new instance.

Render and parse both read these; nothing else in the code spells a briefing label.
"""

from __future__ import annotations

from dataclasses import dataclass

CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳"


@dataclass(frozen=True)
class Labels:
    title_sep: str = " · "
    title_kind: str = "E1 预消化简报"
    summary: str = "状态摘要"
    count: str = "增量条数"
    count_unit: str = "条主增量"
    window_suffix: str = "滑动窗口"
    headlines: str = "核心新增"
    arxiv_tally: str = "涉及 arXiv 号"
    arxiv_new: str = "本次新增"
    arxiv_new_unit: str = "个"
    arxiv_continued: str = "续用锚定"
    sources: str = "一、检查过的来源清单"
    sources_cols: tuple[str, ...] = ("来源目录", "关键文件", "{topic} 相关度")
    increments: str = "二、增量条目"
    increment: str = "增量"
    source: str = "来源"
    arxiv: str = "arXiv 号"
    key_points: str = "要点"
    credibility: str = "可信度"
    relation: str = "与活文档现有脉络的关系"
    section: str = "建议归入章节"
    to_verify: str = "三、值得警惕的矛盾或待核实说法"
    verify_item: str = "矛盾/待核实"
    risk_suffix: str = "风险"
    carried: str = "延续自"
    problem: str = "问题"
    suggestion: str = "建议"
    arxiv_table: str = "四、可引用 arXiv 号列表"
    arxiv_cols: tuple[str, ...] = ("arXiv 号", "标题", "可信度", "与 {topic}.md 关系")
    arxiv_new_relation: str = "本次新增锚点"
    anchored_suffix: str = "锚定"
    reconfirmed: str = "续立确认"
    no_increment: str = "五、本次无显著新增量的来源说明"
    no_increment_intro: str = "以下来源已检查，但无 {topic} 主轴净增量，或已被活文档覆盖："
    priorities: str = "六、建议今晚 E2 活文档更新优先级"
    priority_cols: tuple[str, ...] = ("优先级", "内容", "动作")
    level_high: str = "🔴 最高"
    level_mid: str = "🟡 中"
    level_low: str = "🟢 低"
    # what makes a change urgent for 六 (agent.rules.priority): a reader running the thing must act
    urgent: str = (
        r"(?<![非无零])破坏性|(?<!无)不兼容|移除|废弃|弃用|(?<!上)下线|撤回(?!率)|撤下|下架|停止维护|停止支持|停更|停服|关停"
        r"|不再(?:支持|兼容|维护|可加载)|无人维护|结束维护|生命周期结束|归档(?!层|存储)|退役|放弃[^，。；]{0,20}支持"
        r"|改名|更名|重命名|漏洞|提权|逃逸|劫持|CVE-\d{4}|GHSA-|排障|故障|事故|宕机|服务中断|静默"
        r"|默认(?:开启|启用|打开|改为)|默认值[^，。；]{0,20}(?:改为|调为)"
        r"|(?:改为|升为|设为|成为|变为)[^，。；]{0,20}默认(?!选择|推理引擎|引擎|向量库|方案)"
        r"|迁移(?:指南|路径|手册|清单|.{0,4}坑)"
        r"|(?<!non-)(?<!no )\bbreaking\b|incompatib|\bremov(?:ed|es|al)\b|deprecat|\brenam|\byanked\b"
        r"|end[- ]of[- ](?:life|support)|\bEOL\b|\barchived\b|no longer (?:supported|maintained)|unmaintained"
        r"|\bdrops? support|\bsunsets?\b|discontinu|vulnerab|\bexploit|privilege escalation|hijack|\bRCE\b"
        r"|\bincident|\boutage|silently|migration guide|(?:now|becomes?|made) (?:the )?default"
        r"|(?<!not )(?:on|enabled) by default"
        # a 1.0 release: "Dynamo 1.0", "v1.0", not "温度 1.0", "1.0×", "1.0 s" or "v1.0-rc1"
        r"|(?:(?<=[A-Za-z] )|(?<![0-9A-Za-z.])v)1\.0(?:\.0)?(?![0-9A-Za-z.×%]|[-\s]?(?:rc|alpha|beta|preview)|\s?m?s\b)"
    )
    star: str = "⭐"
    list_sep: str = "；"
    subject_sep: str = "："  # between a to-verify item's subject and its questions
    aged_out: str = "未核实即停止延续：{title}（{since} 起已延续 {evenings} 晚，仍无文档核实；如仍关心请手动跟进）"
    over_budget: str = "未核实即停止延续：{title}（{since} 起；今晚三的待核实上限 {budget} 条已满，排序在后）"
    count_under: str = "低于 {min} 条目标下限：今晚仅 {n} 条合格增量，未用弱条目补凑"
    quiet_evening: str = "今晚窗口内没有新文档，无新增量；未核实的待核实项照常延续"
    count_within: str = "在 {min}-{max} 目标区间内"
    # reading vocabulary: how any writer says the count is under target (parse reads gold briefings too)
    under_target_words: tuple[str, ...] = ("低于", "不足", "未达", "under", "below")
    supplement_word: str = "补充"  # what a relation must say for an increment that adds to an anchor
    supplement_note: str = "（补充 {when} {topic} 锚定：{anchor}）"
    last_night: str = "昨夜基线"
    baseline_of: str = "{when} 基线"
    baseline_held: str = "{label}；{n}条锚定：{subjects}"
    baseline_level: str = "基线"
    adjacent_level: str = "邻接"
    # another topic's briefing written by the same run: what it holds, said from that run's result
    sibling_held: str = "本次运行同晚的 {topic} 简报，{n}条增量：{headlines}；邻接参考，不作增量来源"
    this_run: str = "本次运行"  # 一's folder of a sibling briefing written where the workspace has no name for
    sibling_empty: str = "本次运行同晚的 {topic} 简报，无主增量；邻接参考，不作增量来源"
    named: str = "{name}（{what}）"
    other_cards: str = "其余 {n} 张卡主分类非 {topic}"
    in_increments: str = "主体已纳入增量 {numbers}"
    secondary: str = "{title}（列为次要锚点，见四/六）"
    settled: str = "已核实：{title}（{how}），不再延续"
    nothing_new: str = "无 {topic} 专项净新增"
    covered_by_living: str = "活文档已有覆盖"
    covered_by_briefing: str = "{when} {topic} e1prep 已有覆盖"
    write_into: str = "写入 {section}"
    settled_note: str = "（{origin} 待核实，今晚已核实）"  # 六: after an open question tonight settled
    drop_verify_mark: str = "更新对应锚点，去掉待核实标注"
    and_drop_mark: str = "，去掉待核实标注"  # after 六's action of the increment that settles a question
    to_verify_short: str = "待核实"  # 三's items where space is short (the terminal)
    unmatched: str = "（增量未匹配）"  # a gold fact of an increment the output has no match for (eval)
    carried_short: str = "延续"  # '9-21 延续' where space is short (the eval page)
    blocks_short: tuple[str, ...] = ("三 矛盾/待核实", "四 arXiv", "五 无增量")  # the eval page's side by side
    conflict_side: str = "{doc} 称 {values}{unit}"
    conflict_problem: str = "{sides}，这些 {measure} 数字是否同一配置与统计口径？"
    conflict_title: str = "{subject} {measure}：{values}"
    conflict_or: str = " 还是 "
    list_comma: str = "，"
    conflict_suggestion: str = "读两份原文，核对测试配置与统计口径，确认前活文档只写“{measure} 待核实”"
    disputed_point: str = "{measure} 两份来源说法不一，暂不写入（见待核实 {item}）"
    disputed_point_unlisted: str = "{measure} 两份来源说法不一，暂不写入"
    invalid_id_mark: str = "（编号无效）"  # right after an arXiv ID that cannot exist, wherever the briefing names one
    invalid_id_title: str = "{subject} 引用的 arXiv {id}"
    invalid_id_problem: str = "{doc} 引用的 arXiv {id}，{subject} 的真实 arXiv 号是什么？"
    invalid_id_suggestion: str = "按标题在 arXiv 检索正确编号，核实前不立锚点、不写入活文档"
    # an open question of the living document's list, carried in 三 in its own words
    living_mark_problem: str = "{doc} 列为开放待核实，尚无文档核实"
    living_mark_suggestion: str = "读到能核实它的原文后更新对应锚点，去掉待核实标注"
    title_cut: str = "…"  # where a title is cut to fit
    max_verify_title: int = 40  # characters of a 三 item's title
    section_join: str = "、"  # between the § sections of one document on a 来源 line
    extractor_offline: str = "extractor offline（未调用模型：按文档自身结构与主题画像抽取）"
    footer_offline: str = "本报告由 predigest 自动生成 · {date} · {extractor} · {sources} 份来源 · {calls} 次调用"
    footer: str = (
        "本报告由 predigest 自动生成 · {date} · prompt {prompt} · {answered} · {sources} 份来源 · {calls} 次调用"
    )
    # what answered, in the footer, the run record, the page, eval's rows and `predigest logs`: a
    # model is named only where a model answered
    answered_model: str = "model {model}"
    answered_nobody: str = "无人作答（窗口内没有文档）"
    answered_reference: str = "reference answers (hand-written)"
    answered_relayed: str = "relayed answers of {model}"
    answered_offline: str = "offline extractor"
    answered_unnamed: str = "an unnamed model"
    # the evening assembled by the rules' floor rather than composed by the editor model: said in 状态摘要 and 五
    floor_note: str = "本晚增量由规则按主题键拼装，未经编辑模型编排（{why}）"
    floor_source: str = "编排"
    floor_offline: str = "离线抽取，未调用模型"
    floor_failed: str = "编排调用未得到通过检查的答案，原因见运行记录"  # the reason, in English, is --explain's
    floor_unanswered: str = "卡带中没有本主题的编排答案"
    composed_by: str = "compose {prompt}"  # the footer's prompt, when the editor composed the evening
    partial_note: str = "部分运行：{n} 份来源未读取（见五），本简报不完整"
    partial_intro: str = "以下来源已检查（标“未读取”者除外），但无 {topic} 主轴净增量，或已被活文档覆盖："
    unread_note: str = "未读取：{why}"
    parts_subject: str = "第 {first}-{total} 部分"
    injection_note: str = "疑似注入：证据所在或相邻的段落在向读者或模型下指令（“{passage}”），已剔除"
    injection_doc_note: str = (
        "疑似注入：文档中有向读者或模型下指令的段落（“{passage}”），"
        "本主题的条目可能因此被移走、漏掉或改了星级，请人工核对"
    )

    def circled(self, n: int) -> str:
        return CIRCLED[n - 1] if 1 <= n <= len(CIRCLED) else f"({n})"

    def uncircle(self, s: str) -> int | None:
        s = s.strip()
        if len(s) == 1 and s in CIRCLED:
            return CIRCLED.index(s) + 1
        return None


ZH = Labels()


@dataclass(frozen=True)
class AnswerPhrases:
    """What the offline extractor writes where a model writes prose (relevance reasons, what a
    document held, credibility and relation notes, skipped items, to-verify notes): it stands in
    for the model, and its sentences reach the briefing's 一, 二, 三 and 五 as a model's would."""

    other_topic: str = "另一主题"
    adjacent_reason: str = "{topic} 的同晚简报：邻接参考，不作增量来源"
    adjacent_held: str = "邻接参考"
    cred_release_notes: str = "官方 release notes"
    cred_pr_issue: str = "GitHub PR / issue 可查"
    cred_forum: str = "论坛 / 转载 / 快讯：二手信息"
    cred_official: str = "官方博客 / 文档"
    cred_blog: str = "博客文章"
    cred_github: str = "GitHub 项目"
    cred_self_rated: str = "来源自评 {level}"
    cred_paper: str = "arXiv 论文"
    cred_unsourced: str = "未注明原始来源"
    no_anchor: str = "活文档与往期 {topic} 简报尚无此主题的锚点"
    anchored_where: str = "{when} 锚定「{label}」"
    supplement_note: str = "补充 {where}：新增 {new}"
    covered_note: str = "{where}已覆盖，本条无新的数字、版本、flag 或编号"
    no_section: str = "（{topic} 活文档尚无 § 章节，建议新增）"
    verify_title: str = "{subject} 待核实"
    verify_suggestion: str = "读原文{where}核实后再写入活文档"
    filed_as: str = "归类：{category}"
    adjacent_skip: str = "邻接 {topic}：主题画像命中少，邻接主题的词更多"
    off_profile: str = "未命中 {topic} 主题画像"
    no_items: str = "无 {topic} 条目"
    no_hits: str = "无"
    items_fit: str = "{n} 个条目与 {topic} 主题画像相符（命中：{hits}）"
    none_fit: str = "无条目达到 {topic} 相关度（命中：{hits}）"
    queue_row: str = "work-queue 跟踪项：任务，不是新发现"
    queue_held: str = "{rows} 行中 {mine} 行标注 {topic}"
    queue_empty: str = "无表格行"
    queue_reason: str = "队列快照：{topic} 项均为跟踪中的任务，无新发现"


ZH_ANSWERS = AnswerPhrases()


@dataclass(frozen=True)
class LivingPhrases:
    """What the E2 patch reads in a living document and writes into it (agent/write/patch.py).
    Its lines take the document's own style (bullet, bold, provenance tail); these are the words
    a style cannot supply."""

    verify_mark: str = "待核实"  # an open question on a line, or the heading of the open-items list
    settled: str = "{md} 已核实"  # what the mark becomes when a document settles the question tonight
    secondary_note: str = "，次要锚点"  # after the provenance date of a 3★ paper's short line
    update_words: tuple[str, ...] = ("最后更新", "更新")  # how a header names its update line
    update_line: str = "> 最后更新：{date}（E2，依据 {md} {tail}）"  # a header that has none gets this
    update_e2: str = "（E2）"  # said after the date of an update line that does not name E2
    # the columns of an arXiv index table, by the words of their headers
    index_name: tuple[str, ...] = ("简称", "标题", "名称", "论文", "title", "name")
    index_section: tuple[str, ...] = ("章节", "§", "section")
    index_date: tuple[str, ...] = ("锚定", "日期", "date")


ZH_LIVING = LivingPhrases()
