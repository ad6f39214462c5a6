"""A discrete-time simulator of a streaming job, driving the elasticity core through its ports."""
