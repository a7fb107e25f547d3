"""User simulation for ``conversation_scenario`` eval cases, and what the simulator and the
``per_turn_user_simulator_quality_v1`` metric share (personas, the stop signal)."""
