"""Tests of the modalities, one folder per modality (as in python/maguyva/modalities/)."""
