"""Pydantic models shared by the agent and the eval harness.

Everything the LLM fills or that is serialised lives here, so the agent stages and the eval
speak one vocabulary and a JSON briefing written tonight is readable by tomorrow's run.

Import each model from its module (`schemas.briefing`, `schemas.documents`, `schemas.extraction`,
`schemas.run`, `schemas.runlog`): nothing is re-exported here, so that `predigest inbox`, which
needs only `SourceDoc`, does not build every model of the package on its way in.
"""
