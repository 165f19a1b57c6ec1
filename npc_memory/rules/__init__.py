"""Pure rules over components: salience and caps, relationship change and stages."""
