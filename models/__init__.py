"""Reporting models: SQL files (staging -> marts), data tests, docs, and the BI file publisher (see README.md)."""
