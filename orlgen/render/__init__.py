"""Render: a plan through the templates, datamodel-code-generator and black to source, verified in a child."""
