# A folder of acme.math that has the name of the nested skill acme.math.add:
# the nested skill wins.
DECOY = True
