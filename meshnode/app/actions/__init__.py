"""The actions, one module per area; ``meshnode.app.dispatch`` lists them all."""
