"""model_zoo"""
