"""Tests of stanlogz/flows/."""
