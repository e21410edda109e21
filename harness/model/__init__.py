"""The model side: the chat client over any OpenAI-compatible endpoint (`chat`), its defaults
and prices (`defaults`, `pricing`), the one OpenAI-compatible server (`openai_server`) with
its scripted responders (`doubles`) and the replay of a finished run (`replay`).
"""
