# Figures 1-8 (SVG, PDF, PNG under figures/).
FIGURE_ARTIFACTS = []
