"""Code envs: agentgym/MathTool-v0 (ReTool / ToRL) and agentgym/PyCode-v0 (HumanEval / MBPP)."""
