"""Tests of stanlogz/toolchain/."""
